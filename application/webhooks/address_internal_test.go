package webhooks

import (
	"net/netip"
	"testing"
)

// TestIsPublicRefusesEveryRangeOfTheList walks notGlobal: the first and the
// last address of each range are refused, so a range cannot be listed and
// yet let through.
func TestIsPublicRefusesEveryRangeOfTheList(t *testing.T) {
	t.Parallel()
	for _, p := range notGlobal {
		first := p.Masked().Addr()
		last := first
		b := last.AsSlice()
		for i := p.Bits(); i < len(b)*8; i++ {
			b[i/8] |= 1 << (7 - i%8)
		}
		last, _ = netip.AddrFromSlice(b)
		for _, a := range []netip.Addr{first, last} {
			if IsPublic(a) {
				t.Errorf("%s of %s: public", a, p)
			}
		}
	}
	if len(notGlobal) < 30 {
		t.Fatalf("%d ranges: the list lost entries", len(notGlobal))
	}
}
