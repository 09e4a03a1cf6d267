// Package awspolicy decides what the AWS access policies this repository
// writes allow: the queues' policies of localstack/init-aws.sh and the
// documents of deploy/kubernetes/overlays/aws/iam. moto and LocalStack store
// a queue's policy without enforcing it, so what a policy lets through is
// for a test to prove, and this is the evaluator it proves it with.
//
// It follows IAM's documented evaluation logic for the elements and
// condition operators those documents use, and refuses any other rather
// than guess: a document that needs NotPrincipal, NotAction, an IfExists
// operator or a numeric condition fails to parse until the evaluator
// learns it.
//
//   - A statement applies when its principal, action, resource and every
//     condition match the request.
//   - An explicit Deny in any document that applies wins.
//   - Otherwise a caller of the resource's own account is allowed when a
//     statement of either its identity policies or the resource policy
//     allows it; a caller of another account needs both; a service
//     principal (sns.amazonaws.com) has no identity policy, and needs the
//     resource policy.
//   - Conditions: every operator of a statement must hold (AND), and every
//     key under an operator (AND). Of a key's values, a matching operator
//     holds when any matches (OR), a negated one (…Not…) when none does
//     (NOR). A key the request does not carry fails a matching operator and
//     satisfies a negated one: IAM's rule, and the one a Deny that excepts
//     a principal by a key relies on.
package awspolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Document is one policy document.
type Document struct {
	Version   string
	Statement Statements
}

// Statement is one statement: a resource policy's has a Principal, an
// identity policy's none.
type Statement struct {
	Sid       string
	Effect    string
	Principal *Principal
	Action    Strings
	Resource  Strings
	Condition map[string]map[string]Strings
}

// Principal is a statement's Principal: "*", or the AWS principals and
// the services it names.
type Principal struct {
	Any     bool
	AWS     Strings
	Service Strings
}

// Strings is an element that holds a string or a list of them.
type Strings []string

// Statements is a document's Statement: one statement or a list.
type Statements []Statement

// Parse reads a policy document strictly: an element the evaluator does not
// know, or a condition operator it does not implement, is an error.
func Parse(b []byte) (Document, error) {
	var d Document
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Document{}, fmt.Errorf("policy: %w", err)
	}
	if d.Version != "2012-10-17" {
		return Document{}, fmt.Errorf("policy: Version %q, want 2012-10-17", d.Version)
	}
	for _, s := range d.Statement {
		if s.Effect != "Allow" && s.Effect != "Deny" {
			return Document{}, fmt.Errorf("policy: statement %q: Effect %q", s.Sid, s.Effect)
		}
		if len(s.Action) == 0 || len(s.Resource) == 0 {
			return Document{}, fmt.Errorf("policy: statement %q: no Action or no Resource", s.Sid)
		}
		for op := range s.Condition {
			if _, ok := operators[op]; !ok {
				return Document{}, fmt.Errorf("policy: statement %q: condition operator %s is not one the evaluator implements", s.Sid, op)
			}
		}
	}
	return d, nil
}

// UnmarshalJSON reads a string or a list of strings.
func (s *Strings) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

// UnmarshalJSON reads one statement or a list, each strictly.
func (s *Statements) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		var many []Statement
		if err := strictly(b, &many); err != nil {
			return err
		}
		*s = many
		return nil
	}
	var one Statement
	if err := strictly(b, &one); err != nil {
		return err
	}
	*s = Statements{one}
	return nil
}

// UnmarshalJSON reads "*" or an object of AWS and Service principals, and
// refuses any other kind (Federated, CanonicalUser).
func (p *Principal) UnmarshalJSON(b []byte) error {
	var star string
	if err := json.Unmarshal(b, &star); err == nil {
		if star != "*" {
			return fmt.Errorf("Principal %q: want \"*\" or an object", star)
		}
		p.Any = true
		return nil
	}
	var named struct {
		AWS     Strings
		Service Strings
	}
	if err := strictly(b, &named); err != nil {
		return fmt.Errorf("Principal: %w", err)
	}
	p.AWS, p.Service = named.AWS, named.Service
	return nil
}

func strictly(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Caller is who makes a request: an IAM role or user (ARN), or an AWS
// service acting as a service principal (Service, e.g. sns.amazonaws.com).
type Caller struct {
	ARN     string
	Service string
}

// Request is one call as IAM sees it: who, which action on which resource,
// and the request context's condition keys (aws:SourceArn,
// aws:PrincipalArn, …), which hold only what the request carries.
type Request struct {
	Caller   Caller
	Action   string
	Resource string
	Context  map[string]string
}

// Decision is what IAM decides.
type Decision int

const (
	// ImplicitDeny: nothing allows the request.
	ImplicitDeny Decision = iota
	// Allow: a statement allows it, and none denies it.
	Allow
	// ExplicitDeny: a statement denies it, whatever else allows it.
	ExplicitDeny
)

// String names the decision for a test's message.
func (d Decision) String() string {
	return [...]string{"implicit deny", "allow", "explicit deny"}[d]
}

// Decide evaluates req against the resource's policy (nil: it has none) and
// the caller's identity policies.
func Decide(resource *Document, identity []Document, req Request) (Decision, error) {
	var resourceAllows, identityAllows bool
	if resource != nil {
		for _, s := range resource.Statement {
			if s.Principal == nil {
				return 0, fmt.Errorf("resource policy statement %q has no Principal", s.Sid)
			}
			applies, err := s.applies(req, true)
			if err != nil {
				return 0, err
			}
			if !applies {
				continue
			}
			if s.Effect == "Deny" {
				return ExplicitDeny, nil
			}
			resourceAllows = true
		}
	}
	for _, d := range identity {
		for _, s := range d.Statement {
			if s.Principal != nil {
				return 0, fmt.Errorf("identity policy statement %q has a Principal", s.Sid)
			}
			applies, err := s.applies(req, false)
			if err != nil {
				return 0, err
			}
			if !applies {
				continue
			}
			if s.Effect == "Deny" {
				return ExplicitDeny, nil
			}
			identityAllows = true
		}
	}
	sameAccount := req.Caller.ARN != "" && account(req.Caller.ARN) == account(req.Resource)
	switch {
	case sameAccount && (resourceAllows || identityAllows):
		return Allow, nil
	case req.Caller.Service != "" && resourceAllows:
		return Allow, nil
	case resourceAllows && identityAllows:
		return Allow, nil
	}
	return ImplicitDeny, nil
}

func (s Statement) applies(req Request, checkPrincipal bool) (bool, error) {
	if checkPrincipal && !s.Principal.matches(req.Caller) {
		return false, nil
	}
	if !anyGlob(s.Action, req.Action, true) || !anyGlob(s.Resource, req.Resource, false) {
		return false, nil
	}
	for op, keys := range s.Condition {
		holds, err := operators[op].holds(keys, req.Context)
		if err != nil {
			return false, fmt.Errorf("statement %q: %s: %w", s.Sid, op, err)
		}
		if !holds {
			return false, nil
		}
	}
	return true, nil
}

// matches reports whether the principal names the caller: "*"; an AWS
// principal by ARN, by its account's root or bare account id (any
// principal of that account); a service by name.
func (p *Principal) matches(c Caller) bool {
	if p.Any {
		return true
	}
	if c.Service != "" {
		for _, s := range p.Service {
			if s == c.Service {
				return true
			}
		}
		return false
	}
	for _, a := range p.AWS {
		if a == "*" || a == c.ARN || a == account(c.ARN) || a == "arn:aws:iam::"+account(c.ARN)+":root" {
			return true
		}
	}
	return false
}

// account is the account field of an ARN (arn:partition:service:region:account:…).
func account(arn string) string {
	f := strings.SplitN(arn, ":", 6)
	if len(f) < 6 {
		return ""
	}
	return f[4]
}

// operator is one condition operator: how a key's values match, and
// whether it is negated.
type operator struct {
	match   func(pattern, value string) bool
	negated bool
}

// operators are the condition operators the evaluator implements. An ARN
// operator matches the whole ARN as a glob (IAM matches each of its six
// components; no ARN in these documents has a wildcard that could cross
// one).
var operators = map[string]operator{
	"ArnEquals":       {match: globMatch, negated: false},
	"ArnLike":         {match: globMatch, negated: false},
	"ArnNotEquals":    {match: globMatch, negated: true},
	"ArnNotLike":      {match: globMatch, negated: true},
	"StringEquals":    {match: func(p, v string) bool { return p == v }, negated: false},
	"StringNotEquals": {match: func(p, v string) bool { return p == v }, negated: true},
	"StringLike":      {match: globMatch, negated: false},
	"StringNotLike":   {match: globMatch, negated: true},
}

// holds decides one operator's block: every key (AND); of a key's values
// any (OR) or, negated, none (NOR); a key the request lacks fails a
// matching operator and satisfies a negated one.
func (o operator) holds(keys map[string]Strings, ctx map[string]string) (bool, error) {
	if len(keys) == 0 {
		return false, errors.New("no condition key")
	}
	for key, values := range keys {
		v, present := ctx[key]
		if !present {
			if !o.negated {
				return false, nil
			}
			continue
		}
		matched := false
		for _, p := range values {
			if o.match(p, v) {
				matched = true
			}
		}
		if matched == o.negated {
			return false, nil
		}
	}
	return true, nil
}

func anyGlob(patterns []string, value string, foldCase bool) bool {
	for _, p := range patterns {
		if foldCase {
			p, value = strings.ToLower(p), strings.ToLower(value)
		}
		if globMatch(p, value) {
			return true
		}
	}
	return false
}

// globMatch matches value against pattern, where * is any run of
// characters and ? any one.
func globMatch(pattern, value string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(value)
}
