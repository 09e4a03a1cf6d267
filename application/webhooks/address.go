package webhooks

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// notGlobal are the ranges no webhook may reach: the entries of IANA's
// IPv4 and IPv6 Special-Purpose Address Registries whose "Globally
// Reachable" is False or N/A (iana.org/assignments/iana-ipv4-special-registry
// and iana-ipv6-special-registry), the multicast and limited broadcast
// ranges, and the deprecated IPv6 ones. A receiver there is inside the
// network this service runs in — or no receiver at all — not a merchant's.
// Two blocks are refused whole though a few of their entries are global
// anycast services (PCP, TURN, AMT, AS112 in 192.0.0.0/24 and 2001::/23):
// no webhook receiver lives at those. This is the one list; IsPublic is
// its only reader, and the tests walk it.
var notGlobal = []netip.Prefix{
	// IPv4
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network" (RFC 791)
	netip.MustParsePrefix("10.0.0.0/8"),         // private use (RFC 1918)
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space, carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback (RFC 1122)
	netip.MustParsePrefix("169.254.0.0/16"),     // link local, the cloud metadata address among them (RFC 3927)
	netip.MustParsePrefix("172.16.0.0/12"),      // private use (RFC 1918)
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments (RFC 6890)
	netip.MustParsePrefix("192.0.2.0/24"),       // documentation, TEST-NET-1 (RFC 5737)
	netip.MustParsePrefix("192.88.99.0/24"),     // deprecated 6to4 relay anycast (RFC 7526)
	netip.MustParsePrefix("192.168.0.0/16"),     // private use (RFC 1918)
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking (RFC 2544)
	netip.MustParsePrefix("198.51.100.0/24"),    // documentation, TEST-NET-2 (RFC 5737)
	netip.MustParsePrefix("203.0.113.0/24"),     // documentation, TEST-NET-3 (RFC 5737)
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast (RFC 5771)
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved (RFC 1112)
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast (RFC 919)
	// IPv6
	netip.MustParsePrefix("::/128"),          // unspecified (RFC 4291)
	netip.MustParsePrefix("::1/128"),         // loopback (RFC 4291)
	netip.MustParsePrefix("::/96"),           // IPv4-compatible, deprecated (RFC 4291)
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped (RFC 4291)
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated, SIIT (RFC 2765)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // IPv4/IPv6 translation, local use (RFC 8215)
	netip.MustParsePrefix("100::/64"),        // discard-only (RFC 6666)
	netip.MustParsePrefix("100:0:0:1::/64"),  // dummy prefix (RFC 9780)
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo and benchmarking among them (RFC 2928)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation (RFC 3849)
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("5f00::/16"),       // segment routing SIDs (RFC 9602)
	netip.MustParsePrefix("fc00::/7"),        // unique local (RFC 4193)
	netip.MustParsePrefix("fe80::/10"),       // link-local unicast (RFC 4291)
	netip.MustParsePrefix("fec0::/10"),       // site-local, deprecated (RFC 3879)
	netip.MustParsePrefix("ff00::/8"),        // multicast (RFC 4291)
}

// The IPv6 ranges that carry an IPv4 address a gateway forwards to: public
// only if the address they carry is.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix, the address in the last 32 bits (RFC 6052)
	sixTo4 = netip.MustParsePrefix("2002::/16")    // 6to4, the address in bits 16 to 48 (RFC 3056)
	// globalUnicast is the only IPv6 space IANA has allocated for global
	// unicast (the IPv6 Address Space registry); the rest is reserved.
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// IsPublic reports whether a webhook may be sent to addr: an address of the
// public internet. It refuses every range of notGlobal, IPv6 outside
// 2000::/3, and the NAT64 (64:ff9b::/96) and 6to4 (2002::/16) forms of an
// IPv4 address it refuses.
func IsPublic(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	if addr.Is6() {
		b := addr.As16()
		switch {
		case nat64.Contains(addr):
			return IsPublic(netip.AddrFrom4([4]byte(b[12:])))
		case sixTo4.Contains(addr):
			return IsPublic(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, p := range notGlobal {
		if p.Contains(addr) {
			return false
		}
	}
	return addr.Is4() || globalUnicast.Contains(addr)
}

// notPublicNames are the top-level domains of the IANA Special-Use Domain
// Names registry (iana.org/assignments/special-use-domain-names) that name
// no host of the public internet, and .internal, which ICANN reserved for
// private networks: a name under them resolves, if at all, inside ours.
var notPublicNames = []string{"localhost", "local", "internal", "home.arpa", "arpa", "test", "invalid", "onion", "alt"}

// maxURLLen bounds an endpoint's URL.
const maxURLLen = 2048

// CheckURL checks an endpoint's URL at creation and returns it normalised:
// the form that is stored and dialled. It must be absolute, https (http
// too when allowPrivate), without user, password or fragment, with a port
// from 1 to 65535 if any, and a host that is a plain public name or
// address, read the way the dialler will read it:
//
//   - a name must be ASCII: the HTTP client maps a name that is not to
//     ASCII (IDNA, UTS #46), where fullwidth and circled digits become
//     digits (①②⑦.⓪.⓪.① is 127.0.0.1), so such a name is refused and
//     an internationalised one is written in its xn-- form. It is
//     lower-cased, one trailing dot dropped, and must be a DNS host name
//     (letters, digits, hyphens) of at least two labels, not under a
//     special-use domain (notPublicNames), whose last label is not a
//     number;
//   - an address must be written plainly: dotted-decimal IPv4, or IPv6 in
//     brackets without a zone. The other forms the C resolver takes
//     (0x7f000001, 2130706433, 0177.0.0.1, 127.1) are refused, whatever
//     they name; and the address must be IsPublic.
//
// With allowPrivate (compose and tests) only the form is checked. A host
// name is not resolved here: what it resolves to is checked where it is
// dialled, on every attempt (adapters/webhooksender), which DNS rebinding
// cannot pass. Errors wrap ErrInvalidEndpoint.
func CheckURL(raw string, allowPrivate bool) (string, error) {
	invalid := func(detail string) error { return fmt.Errorf("%w: url %s", ErrInvalidEndpoint, detail) }
	if len(raw) > maxURLLen {
		return "", invalid(fmt.Sprintf("is longer than %d bytes", maxURLLen))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return "", invalid("must be an absolute URL such as https://example.com/webhooks")
	case u.Scheme != "https" && !(allowPrivate && u.Scheme == "http"):
		return "", invalid("must use https")
	case u.User != nil:
		return "", invalid("must not carry a user or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", invalid("must not have a fragment")
	}
	if strings.HasSuffix(u.Host, ":") {
		return "", invalid("has an empty port")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || p[0] == '0' {
			return "", invalid("port must be a number from 1 to 65535")
		}
	}
	host, err := normalHost(u.Hostname())
	if err != nil {
		return "", invalid(err.Error())
	}
	if !allowPrivate {
		if err := publicHost(host); err != nil {
			return "", invalid(err.Error())
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is6() {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	u.Host = host
	return u.String(), nil
}

// normalHost returns host as the dialler reads it: an address in its plain
// form, or a name in lower-case ASCII without its trailing dot. It refuses
// an address in another form, a zone, and what is not a host name.
func normalHost(host string) (string, error) {
	if strings.Contains(host, "%") {
		return "", fmt.Errorf("host must not carry a zone")
	}
	if strings.Contains(host, ":") { // an IPv6 literal; url.Parse took its brackets off
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is6() {
			return "", fmt.Errorf("host is not an IPv6 address")
		}
		return addr.String(), nil
	}
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is4() {
		return addr.String(), nil
	}
	for i := range len(host) {
		if host[i] >= 0x80 {
			return "", fmt.Errorf("host must be ASCII: write an internationalised domain name in its xn-- form")
		}
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	labels := strings.Split(name, ".")
	if last := labels[len(labels)-1]; isNumeric(last) {
		// The dialler's resolver reads such a host as an IPv4 address (the
		// C library's inet_aton: 127.1, 2130706433, 0x7f000001, 0177.0.0.1),
		// and no public name ends in a number.
		if addr, err := netip.ParseAddr(name); err == nil {
			return addr.String(), nil // 127.0.0.1. is 127.0.0.1
		}
		return "", fmt.Errorf("host %q is an IPv4 address in a form other than dotted decimal, or a name ending in a number; write an address as four decimal numbers", cut(name))
	}
	if len(name) > 253 {
		return "", fmt.Errorf("host is longer than 253 characters")
	}
	for _, l := range labels {
		if !isHostLabel(l) {
			return "", fmt.Errorf("host %q is not a host name (letters, digits and hyphens, dot-separated)", cut(name))
		}
	}
	return name, nil
}

// publicHost refuses a normalised host that is not public: an address
// IsPublic refuses, a single-label name, or a name under notPublicNames.
func publicHost(host string) error {
	if addr, err := netip.ParseAddr(host); err == nil {
		if !IsPublic(addr) {
			return fmt.Errorf("must not name a private, loopback, link-local or reserved address")
		}
		return nil
	}
	if !strings.Contains(host, ".") {
		return fmt.Errorf("host must be a public domain name, with a dot")
	}
	for _, tld := range notPublicNames {
		if host == tld || strings.HasSuffix(host, "."+tld) {
			return fmt.Errorf("host must not be under .%s, which names no host of the internet", tld)
		}
	}
	return nil
}

// isNumeric reports whether a label is a number as inet_aton reads one:
// decimal, octal (a leading 0) or hex (0x).
func isNumeric(l string) bool {
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		l = h
		if l == "" {
			return true
		}
		for i := range len(l) {
			if !strings.ContainsRune("0123456789abcdef", rune(l[i])) {
				return false
			}
		}
		return true
	}
	if l == "" {
		return false
	}
	for i := range len(l) {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// isHostLabel reports whether l is a label of a host name (RFC 1123):
// letters, digits and hyphens, not at either end, at most 63.
func isHostLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := range len(l) {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// cut shortens what a client sent for an error's text.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
