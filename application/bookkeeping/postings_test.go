package bookkeeping

import (
	"slices"
	"testing"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// TestEveryKindIsDeclaredOnceAndSoundly: each kind has one declaration (two
// event types of one kind would be two, free to disagree), a declaration the
// ledger can post by, an effect that agrees with it on whether money moves,
// and predecessors the registry declares, in no circle: a kind that depends
// on a kind no rule applies, or on itself through others, would wait for
// good.
func TestEveryKindIsDeclaredOnceAndSoundly(t *testing.T) {
	declared := map[ledger.Kind]string{}
	for typ, r := range rules {
		d := r.postings
		if other, ok := declared[d.Kind]; ok {
			t.Errorf("kind %q is declared by %s and %s: declare each kind once (application/bookkeeping/events.go)", d.Kind, other, typ)
		}
		declared[d.Kind] = typ
		if err := d.Check(); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
		if r.effect.posts() != d.Moves() {
			t.Errorf("%s: its effect posts=%v, but its postings move money=%v", typ, r.effect.posts(), d.Moves())
		}
	}
	for _, r := range rules {
		for _, k := range r.postings.DependsOn {
			if _, ok := declared[k]; !ok {
				t.Errorf("kind %q depends on %q, which no rule declares: it would wait for good", r.postings.Kind, k)
			}
		}
		// Follow the predecessors: none leads back.
		seen, next := map[ledger.Kind]bool{}, slices.Clone(r.postings.DependsOn)
		for len(next) > 0 {
			k := next[0]
			next = next[1:]
			if k == r.postings.Kind {
				t.Errorf("kind %q depends on itself, through %v: neither would ever apply", k, r.postings.DependsOn)
				break
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			if d, ok := ruleOf(k); ok {
				next = append(next, d.postings.DependsOn...)
			}
		}
	}
}
