package webhooks

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// notPublic are the ranges no webhook may reach beside those netip names
// (loopback, private, link-local, multicast, unspecified): a receiver on
// them is inside the network this service runs in, not a merchant's.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
}

// embedsIPv4 are the IPv6 ranges that carry an IPv4 address a gateway may
// forward to: each is public only if the address it carries is.
var embedsIPv4 = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64, the address in the last 32 bits
	netip.MustParsePrefix("::/96"),        // IPv4-compatible (deprecated), likewise
}

// IsPublic reports whether a webhook may be sent to addr: an address of the
// public internet, not loopback (127/8, ::1), private (RFC 1918, fc00::/7),
// link-local (169.254/16 with the cloud metadata address 169.254.169.254,
// fe80::/10), unspecified, multicast, carrier-grade NAT (100.64/10), 0/8,
// nor any of those in an IPv4-mapped, IPv4-compatible or NAT64 form.
func IsPublic(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.Is6() {
		for _, p := range embedsIPv4 {
			if p.Contains(addr) {
				b := addr.As16()
				return IsPublic(netip.AddrFrom4([4]byte(b[12:])))
			}
		}
		if b := addr.As16(); b[0] == 0x20 && b[1] == 0x02 { // 6to4: the address in bits 16 to 48
			return IsPublic(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if !addr.IsValid() || addr.IsUnspecified() || addr.IsLoopback() || addr.IsPrivate() ||
		addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() || addr.IsMulticast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// maxURLLen bounds an endpoint's URL.
const maxURLLen = 2048

// CheckURL checks an endpoint's URL at creation: absolute, https (http too
// when allowPrivate), no user or password, no fragment, and a host that is
// not an address IsPublic refuses (unless allowPrivate). A host name is not
// resolved here: what it resolves to is checked where it is dialled, on
// every attempt (adapters/webhooksender), which DNS rebinding cannot pass.
// Errors wrap ErrInvalidEndpoint.
func CheckURL(raw string, allowPrivate bool) error {
	invalid := func(detail string) error { return fmt.Errorf("%w: url %s", ErrInvalidEndpoint, detail) }
	if len(raw) > maxURLLen {
		return invalid(fmt.Sprintf("is longer than %d bytes", maxURLLen))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return invalid("must be an absolute URL such as https://example.com/webhooks")
	case u.Scheme != "https" && !(allowPrivate && u.Scheme == "http"):
		return invalid("must use https")
	case u.User != nil:
		return invalid("must not carry a user or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return invalid("must not have a fragment")
	}
	host := u.Hostname()
	if allowPrivate {
		return nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return invalid("must not name this host")
	}
	if ip := net.ParseIP(host); ip != nil {
		addr, _ := netip.AddrFromSlice(ip)
		if !IsPublic(addr) {
			return invalid("must not name a private, loopback, link-local or reserved address")
		}
	}
	return nil
}
