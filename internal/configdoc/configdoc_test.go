package configdoc

import (
	"slices"
	"testing"
)

const doc = "# Configuration\n\n" +
	"## Every service\n\n| variable | default | meaning |\n|---|---|---|\n" +
	"| `DATABASE_URL` | required | its database |\n" +
	"| `OPS_ADDR` | `:9090` payments, `:9091` ledger | ops |\n\n" +
	"## payments\n\n| variable | default | meaning |\n|---|---|---|\n" +
	"| `A_ONE`, `A_TWO` | `1s` | two names, one row |\n\n" +
	"```\n| `IN_A_FENCE` | x | y |\n```\n\n" +
	"## docker compose\n\n| `COMPOSE_ONLY` | `x` | not a service's |\n"

func TestRows(t *testing.T) {
	rows := Rows(doc)
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if want := []string{"DATABASE_URL", "OPS_ADDR", "A_ONE", "A_TWO", "COMPOSE_ONLY"}; !slices.Equal(names, want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	if !rows[0].Required() || rows[1].Required() {
		t.Errorf("Required: got %v, %v; want true, false", rows[0].Required(), rows[1].Required())
	}
	if v, ok := rows[1].DefaultValue(); !ok || v != ":9090" {
		t.Errorf("OPS_ADDR default: got %q, %v; want :9090", v, ok)
	}
	if _, ok := rows[0].DefaultValue(); ok {
		t.Error("DATABASE_URL: a default found where the cell quotes none")
	}
	got := ServiceTables(doc, []string{"payments", "ledger"})
	if !got["DATABASE_URL"]["ledger"] || !got["A_TWO"]["payments"] || got["A_TWO"]["ledger"] || got["COMPOSE_ONLY"] != nil {
		t.Errorf("ServiceTables: got %v", got)
	}
	if n := len(Service(doc, "ledger")); n != 2 {
		t.Errorf("Service(ledger): got %d rows, want 2 (the every-service rows)", n)
	}
}
