package paymentsoutbox_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tourLink is a stop's link in docs/TOUR.md: [`pkg.Name`](../path/file.go)
// or [`pkg.Type.Method`](../path/file.go).
var tourLink = regexp.MustCompile("\\[`([^`]+)`\\]\\((\\.\\./[^)#\\s]+\\.go)\\)")

// TestTourLinksResolve keeps docs/TOUR.md true to the code, as the
// walkthrough test keeps the README's requests: every link of the tour names
// a file that exists and a function, method or type that file declares, in
// the package the name says. A rename or a move fails here with the stop to
// fix. Every numbered stop links at least one declaration.
func TestTourLinksResolve(t *testing.T) {
	doc, err := os.ReadFile("docs/TOUR.md")
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	stop, stopLinks := "", 0
	endStop := func() {
		if stop != "" && stopLinks == 0 {
			t.Errorf("docs/TOUR.md, stop %q links no declaration: give it a [`pkg.Name`](../file.go) link", stop)
		}
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			endStop()
			stop, stopLinks = "", 0
			if regexp.MustCompile(`^\d+\.`).MatchString(h) {
				stop = h
			}
			continue
		}
		for _, m := range tourLink.FindAllStringSubmatch(line, -1) {
			links++
			stopLinks++
			name, file := m[1], filepath.Join("docs", m[2])
			if err := declares(file, name); err != nil {
				t.Errorf("docs/TOUR.md links [`%s`](%s): %v", name, m[2], err)
			}
		}
	}
	endStop()
	if links < 10 {
		t.Fatalf("found %d declaration links in docs/TOUR.md; the test reads the wrong form", links)
	}
}

// declares checks that file is a Go file of package pkg declaring name,
// given as pkg.Func, pkg.Type (a var or const too) or pkg.Type.Method.
func declares(file, qualified string) error {
	parts := strings.Split(qualified, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return errors.New("want pkg.Name or pkg.Type.Method")
	}
	if _, err := os.Stat(file); err != nil {
		return errors.New("no such file")
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	if f.Name.Name != parts[0] {
		return fmt.Errorf("the file is package %s, not %s", f.Name.Name, parts[0])
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != parts[len(parts)-1] {
				continue
			}
			if len(parts) == 2 && d.Recv == nil {
				return nil
			}
			if len(parts) == 3 && d.Recv != nil && receiverType(d.Recv.List[0].Type) == parts[1] {
				return nil
			}
		case *ast.GenDecl:
			if len(parts) != 2 {
				continue
			}
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == parts[1] {
						return nil
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == parts[1] {
							return nil
						}
					}
				}
			}
		}
	}
	return fmt.Errorf("%s is not declared in it", strings.Join(parts[1:], "."))
}

// receiverType is the type name of a receiver: T, *T, T[P] or *T[P, Q].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
