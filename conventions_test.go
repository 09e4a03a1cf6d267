package paymentsoutbox_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The conventions docs/ARCHITECTURE.md states, one per concern, as tests:
// each rule reads the code's syntax (not its text, so a comment that names
// a forbidden call is no offence) and says where a break is and what to
// use instead. Each rule also checks it read what it should, so that a
// moved directory cannot turn it into a test of nothing.

// goFile is one parsed file of the repository, both modules, with its
// path relative to the repository's root.
type goFile struct {
	path string
	fset *token.FileSet
	file *ast.File
}

// parseGoFiles parses every Go file under the root whose path keep accepts,
// skipping testdata and hidden directories.
func parseGoFiles(t *testing.T, keep func(path string) bool) []goFile {
	t.Helper()
	var files []goFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		path = filepath.ToSlash(path)
		if !strings.HasSuffix(path, ".go") || !keep(path) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, goFile{path: path, fset: fset, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// selects reports whether n is the selector pkg.name.
func selects(n ast.Node, pkg, name string) bool {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// loggerish names a function that builds a logger or a log handler.
var loggerish = regexp.MustCompile(`(?i)(handler|logger)$|^(new)?log$`)

// discardingLoggers returns where f builds a logger that throws its records
// away: slog.DiscardHandler, or io.Discard handed to a function that builds
// a logger or a handler (slog.NewTextHandler(io.Discard, nil), a cmd's
// newLogger(io.Discard, …)).
func discardingLoggers(f *ast.File) []token.Pos {
	var at []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		if selects(n, "slog", "DiscardHandler") {
			at = append(at, n.Pos())
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var name string
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			name = fn.Name
		case *ast.SelectorExpr:
			name = fn.Sel.Name
		}
		if !loggerish.MatchString(name) {
			return true
		}
		for _, arg := range call.Args {
			if selects(arg, "io", "Discard") {
				at = append(at, call.Pos())
			}
		}
		return true
	})
	return at
}

// TestTestsShareOneDiscardingLogger keeps the test logger one helper
// (docs/ARCHITECTURE.md, "Tests share helpers, not copies"): a test that
// reads nothing a component logs passes logtest.Discard(), and no test file
// outside internal/logtest builds a discarding logger of its own.
func TestTestsShareOneDiscardingLogger(t *testing.T) {
	files := parseGoFiles(t, func(path string) bool {
		return strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "internal/logtest/")
	})
	if len(files) < 200 {
		t.Fatalf("read %d test files; the test is not looking where it should", len(files))
	}
	for _, f := range files {
		for _, pos := range discardingLoggers(f.file) {
			t.Errorf("%s: a test builds its own discarding logger; use logtest.Discard() (internal/logtest)", f.fset.Position(pos))
		}
	}
}

// TestDiscardingLoggerRuleRefusesACopy keeps the rule above able to fail.
func TestDiscardingLoggerRuleRefusesACopy(t *testing.T) {
	for src, want := range map[string]int{
		`func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }`: 1,
		`var quiet = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{}))`:         1,
		`func f() { run(slog.New(slog.DiscardHandler)) }`:                                       1,
		`func f() { newLogger(io.Discard, slog.LevelInfo) }`:                                    1,
		`func f() { io.Copy(io.Discard, r); run(ctx, io.Discard) }`:                             0,
		`func f() { run(logtest.Discard()) }`:                                                   0,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x_test.go", "package x\n"+src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(discardingLoggers(f)); got != want {
			t.Errorf("%s: got %d discarding loggers, want %d", src, got, want)
		}
	}
}

// classifier is the one function that turns a driver's error into
// dependency.ErrUnavailable.
const classifier = "adapters/postgres/unavailable.go"

// imports reports whether f imports a package whose path begins with prefix.
func imports(f *ast.File, prefix string) bool {
	for _, imp := range f.Imports {
		if strings.HasPrefix(strings.Trim(imp.Path.Value, `"`), prefix) {
			return true
		}
	}
	return false
}

// ownClassifiers returns where f, a file that speaks to Postgres, decides
// by itself that an error is an outage: it names dependency.ErrUnavailable,
// or it asks pgconn the questions the classifier asks.
func ownClassifiers(f *ast.File) []token.Pos {
	var at []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		switch {
		case selects(n, "dependency", "ErrUnavailable"),
			selects(n, "pgconn", "SafeToRetry"), selects(n, "pgconn", "Timeout"), selects(n, "pgconn", "ConnectError"):
			at = append(at, n.Pos())
		}
		return true
	})
	return at
}

// TestOneUnavailableClassifier keeps "a dependency is down, retry" one
// rule for every store (docs/ARCHITECTURE.md, "Errors"): no file that
// speaks to Postgres or lives under adapters/postgres, the classifier's
// excepted, wraps dependency.ErrUnavailable or asks pgconn whether an
// error is an outage, and every store under adapters/postgres returns its
// errors through postgres.Unavailable.
func TestOneUnavailableClassifier(t *testing.T) {
	files := parseGoFiles(t, func(path string) bool {
		return !strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "tools/")
	})
	stores := map[string]bool{} // a package under adapters/postgres that speaks pgx → it calls postgres.Unavailable
	read := 0
	for _, f := range files {
		speaksPgx := imports(f.file, "github.com/jackc/pgx/v5")
		if !speaksPgx && !strings.HasPrefix(f.path, "adapters/postgres/") {
			continue
		}
		read++
		if f.path != classifier {
			for _, pos := range ownClassifiers(f.file) {
				t.Errorf("%s: a store classifies a driver error itself; return it through postgres.Unavailable (%s), and keep only what the store names (not found, a constraint) before that call", f.fset.Position(pos), classifier)
			}
		}
		dir := filepath.ToSlash(filepath.Dir(f.path))
		if !speaksPgx || !strings.HasPrefix(dir, "adapters/postgres/") || dir == "adapters/postgres/pgtest" {
			continue
		}
		calls := false
		ast.Inspect(f.file, func(n ast.Node) bool {
			calls = calls || selects(n, "postgres", "Unavailable")
			return !calls
		})
		stores[dir] = stores[dir] || calls
	}
	if read < 20 || len(stores) < 6 {
		t.Fatalf("read %d files that speak pgx or live under adapters/postgres, and %d stores (%v); the test is not looking where it should", read, len(stores), stores)
	}
	for dir, calls := range stores {
		if !calls {
			t.Errorf("%s: a store that never calls postgres.Unavailable answers an outage 500, not 503; return its errors through it", dir)
		}
	}
}

// TestClassifierRuleRefusesACopy keeps the rule above able to fail.
func TestClassifierRuleRefusesACopy(t *testing.T) {
	for src, want := range map[string]int{
		`func readErr(err error) error { return fmt.Errorf("%w: %w", dependency.ErrUnavailable, err) }`: 1,
		`func retry(err error) bool { return pgconn.SafeToRetry(err) || pgconn.Timeout(err) }`:          2,
		`func f(err error) error { var c *pgconn.ConnectError; _ = errors.As(err, &c); return err }`:    1,
		`func f(err error) error { return fmt.Errorf("read: %w", postgres.Unavailable(err)) }`:          0,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(ownClassifiers(f)); got != want {
			t.Errorf("%s: got %d own classifiers, want %d", src, got, want)
		}
	}
}

// transact is the one place a transaction begins.
const transact = "adapters/postgres/tx.go"

// beginsTransactions returns where f begins a transaction of its own: a
// call to pgx.BeginFunc or pgx.BeginTxFunc, a Begin or BeginTx method
// (a pool's, a connection's, a transaction's savepoint), or a statement
// that opens one (BEGIN, START TRANSACTION, SAVEPOINT).
func beginsTransactions(f *ast.File) []token.Pos {
	opens := regexp.MustCompile(`(?i)^\s*(begin|start\s+transaction|savepoint)\b`)
	var at []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "BeginFunc", "BeginTxFunc", "Begin", "BeginTx":
					at = append(at, n.Pos())
				}
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && opens.MatchString(strings.Trim(n.Value, "`\"")) {
				at = append(at, n.Pos())
			}
		}
		return true
	})
	return at
}

// TestOneWayToBeginATransaction keeps the transaction's SQL shape one
// (docs/ARCHITECTURE.md, "One transaction shape"): in the services' code,
// only postgres.Transact begins a transaction; a store runs everything else
// as one statement or one batch on the pool, and a savepoint through
// Tx.Savepoint. Tests, the helpers only tests import (pgtest) and the tools
// module may begin their own.
func TestOneWayToBeginATransaction(t *testing.T) {
	files := parseGoFiles(t, func(path string) bool {
		return !strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "tools/") &&
			!strings.HasPrefix(path, "adapters/postgres/pgtest/")
	})
	transacts := 0
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			if selects(n, "postgres", "Transact") {
				transacts++
			}
			return true
		})
		if f.path == transact {
			continue
		}
		for _, pos := range beginsTransactions(f.file) {
			t.Errorf("%s: begins a transaction of its own; run it in postgres.Transact (%s), a savepoint in Tx.Savepoint", f.fset.Position(pos), transact)
		}
	}
	if transacts < 10 {
		t.Fatalf("found %d calls of postgres.Transact; the test is not looking where it should", transacts)
	}
}

// TestTransactionRuleRefusesACopy keeps the rule above able to fail.
func TestTransactionRuleRefusesACopy(t *testing.T) {
	for src, want := range map[string]int{
		`func f() error { return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return nil }) }`:                              1,
		`func f() { tx, _ := pool.Begin(ctx); _ = tx }`:                                                                         1,
		`func f() { conn.Exec(ctx, "BEGIN"); conn.Exec(ctx, ` + "`savepoint sp`" + `) }`:                                        2,
		`func f() { b.Queue("begin isolation level serializable") }`:                                                            1,
		`func f() error { return postgres.Transact(ctx, pool, func(tx *postgres.Tx) error { return tx.Savepoint(ctx, nil) }) }`: 0,
		`func f() { conn.Exec(ctx, "SELECT 'begin'") }`:                                                                         0,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(beginsTransactions(f)); got != want {
			t.Errorf("%s: got %d transactions begun, want %d", src, got, want)
		}
	}
}
