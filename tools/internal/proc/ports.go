package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreeAddrs returns n distinct loopback addresses that are free now, for a
// child process to listen on. The ports come from below the kernel's
// ephemeral range: a port from that range, closed so that a child can bind
// it, is what the kernel hands next to any outgoing connection or :0
// listener of any process — and under load one of those took it first
// (make dev's test saw its ledger's port taken). Every listener is held
// until all n are found, so no two of them are the same port.
func FreeAddrs(n int) ([]string, error) {
	lo := ephemeralLow() / 2
	hi := ephemeralLow()
	span := hi - lo
	start := rand.IntN(span)
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			_ = ln.Close()
		}
	}()
	addrs := make([]string, 0, n)
	for i := 0; i < span && len(addrs) < n; i++ {
		port := lo + (start+i)%span
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		held = append(held, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	if len(addrs) < n {
		return nil, fmt.Errorf("find %d free ports in %d–%d: found %d", n, lo, hi-1, len(addrs))
	}
	return addrs, nil
}

// FreePorts is FreeAddrs' ports alone.
func FreePorts(n int) ([]int, error) {
	addrs, err := FreeAddrs(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		ports[i], _ = strconv.Atoi(p)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range), or 32768, its usual start, where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 2048 {
				return lo
			}
		}
	}
	return 32768
}
