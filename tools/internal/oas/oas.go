// Package oas lists the operations of an OpenAPI document. The tests that
// must reach every operation — the generated clients' live answers
// (tools/walkthrough), the API reference in a browser (tools/apireference) —
// take the list from the document, so that an operation added to it is
// missed by neither.
package oas

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Operation is one operation of a document: its operationId, its method
// (upper case) and its path template.
type Operation struct {
	ID, Method, Path string
}

func (o Operation) String() string { return o.ID + " (" + o.Method + " " + o.Path + ")" }

// methods are the keys of an OpenAPI 3.1 path item that name an operation.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operations returns doc's operations, ordered by path and then method. An
// operation without an operationId is an error: every operation of this
// project's documents has one, which names its generated method.
func Operations(doc []byte) ([]Operation, error) {
	var d struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	var ops []Operation
	for path, item := range d.Paths {
		for _, m := range methods {
			node, ok := item[m]
			if !ok {
				continue
			}
			var op struct {
				ID string `yaml:"operationId"`
			}
			if err := node.Decode(&op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", m, path, err)
			}
			if op.ID == "" {
				return nil, fmt.Errorf("%s %s has no operationId", strings.ToUpper(m), path)
			}
			ops = append(ops, Operation{ID: op.ID, Method: strings.ToUpper(m), Path: path})
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("the document has no operation")
	}
	slices.SortFunc(ops, func(a, b Operation) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Method, b.Method))
	})
	return ops, nil
}
