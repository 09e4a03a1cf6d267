package postgres_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

// Every migration of every service rolls back: for each version, up to it,
// down one and up again leave the schema exactly as it was on each side. A
// Down that forgets a column, an index, a constraint or a trigger its Up
// added differs from the schema before the Up, and fails here — naming the
// service, the version and what was left behind. The services are the
// directories of migrations/, so a new service's migrations, and a fork's
// new migration, are checked without a line of test.
func TestEveryMigrationRollsBack(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("../../migrations/*/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]bool{}
	for _, f := range dirs {
		services[filepath.Dir(f)] = true
	}
	if len(services) < 3 {
		t.Fatalf("found the migrations of %d services in migrations/, want every service's (payments, ledger, webhooks)", len(services))
	}
	for dir := range services {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			for _, p := range rollBack(t, os.DirFS(dir)) {
				t.Error(p)
			}
		})
	}
}

// The check itself fails on the mutation it is for: a Down that leaves a
// column behind, and one that drops an index its Up never made.
func TestRollBackCatchesADownThatLeavesSomethingBehind(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"00001_base.sql": {Data: []byte(`-- +goose Up
CREATE TABLE things (id bigint PRIMARY KEY, name text NOT NULL);
CREATE INDEX things_name ON things (name);
-- +goose Down
DROP TABLE things;
`)},
		"00002_colour.sql": {Data: []byte(`-- +goose Up
ALTER TABLE things ADD COLUMN colour text;
-- +goose Down
SELECT 1; -- forgets the column
`)},
		"00003_lost_index.sql": {Data: []byte(`-- +goose Up
SELECT 1;
-- +goose Down
DROP INDEX things_name;
`)},
	}
	problems := rollBack(t, fsys)
	all := strings.Join(problems, "\n")
	for _, w := range []string{"down from version 2 leaves", "+ column things.colour", "up to version 2 again"} {
		if !strings.Contains(all, w) {
			t.Errorf("the check's report does not say %q:\n%s", w, all)
		}
	}
	// Without version 2, the lost index of version 3's Down.
	delete(fsys, "00002_colour.sql")
	all = strings.Join(rollBack(t, fsys), "\n")
	for _, w := range []string{"down from version 3 leaves", "- index things_name"} {
		if !strings.Contains(all, w) {
			t.Errorf("the check's report does not say %q:\n%s", w, all)
		}
	}
}

// rollBack migrates a database of its own through fsys one version at a
// time, and at each version goes down one and up again, comparing schemas.
// It returns what differed.
func rollBack(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	before := schemaOf(t, pool)
	for _, m := range provider.ListSources() {
		if _, err := provider.UpByOne(ctx); err != nil {
			t.Fatalf("up to %d: %v", m.Version, err)
		}
		after := schemaOf(t, pool)
		if _, err := provider.Down(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("down from version %d fails: %v", m.Version, err))
			return problems
		}
		if d := diff(before, schemaOf(t, pool)); d != "" {
			problems = append(problems, fmt.Sprintf("down from version %d leaves the schema other than before its up (%s):\n%s", m.Version, m.Path, d))
		}
		if _, err := provider.UpByOne(ctx); err != nil {
			problems = append(problems, fmt.Sprintf("up to version %d again, after its down, fails (%s): %v", m.Version, m.Path, err))
			return problems
		}
		if d := diff(after, schemaOf(t, pool)); d != "" {
			problems = append(problems, fmt.Sprintf("up to version %d after its down gives another schema than the first up (%s):\n%s", m.Version, m.Path, d))
		}
		before = after
	}
	return problems
}

// schemaOf describes the public schema, one line per object and property,
// from the catalog: what pg_dump --schema-only would show of it, without
// needing pg_dump where the tests run. goose's own table is left out.
func schemaOf(t *testing.T, pool *pgxpool.Pool) map[string]bool {
	t.Helper()
	const q = `
SELECT 'column ' || c.table_name || '.' || c.column_name || ' ' || c.data_type
       || ' null=' || c.is_nullable || ' default=' || coalesce(c.column_default, '')
FROM information_schema.columns c
WHERE c.table_schema = 'public' AND c.table_name <> 'goose_db_version'
UNION ALL
SELECT 'relation ' || c.relname || ' kind=' || c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relname NOT LIKE 'goose_db_version%'
UNION ALL
SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> 'goose_db_version'
UNION ALL
SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes
WHERE schemaname = 'public' AND tablename <> 'goose_db_version'
UNION ALL
SELECT 'view ' || viewname || ' ' || pg_get_viewdef(('public.' || viewname)::regclass, true)
FROM pg_views WHERE schemaname = 'public'
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid) FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND NOT t.tgisinternal
UNION ALL
SELECT 'function ' || pg_get_functiondef(p.oid) FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
UNION ALL
SELECT 'type ' || t.typname || ' ' || coalesce((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
       FROM pg_enum e WHERE e.enumtypid = t.oid), '')
FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd')
UNION ALL
SELECT 'extension ' || extname FROM pg_extension WHERE extname <> 'plpgsql'`
	rows, err := pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	s := map[string]bool{}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		s[line] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// diff lists what is in only one of two schemas: "+" for what b has more,
// "-" for what it lacks; "" when they are equal.
func diff(a, b map[string]bool) string {
	var out []string
	for l := range b {
		if !a[l] {
			out = append(out, "  + "+l)
		}
	}
	for l := range a {
		if !b[l] {
			out = append(out, "  - "+l)
		}
	}
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
