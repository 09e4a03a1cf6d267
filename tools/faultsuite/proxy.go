package main

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy is an in-process TCP proxy the suite puts between a service and a
// dependency (Postgres, the SNS/SQS endpoint) so it can break the link on
// purpose: cut it, swallow the replies, or slow them down.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    proxyMode
	latency time.Duration
	tap     func() func([]byte) // makes each connection's reader of the replies
	conns   map[net.Conn]struct{}
	closed  bool

	// upstream counts the bytes forwarded to the target since the last
	// dropReplies, so the suite can tell when a request is in flight.
	upstream atomic.Int64
}

type proxyMode int

const (
	pass        proxyMode = iota
	cut                   // every connection closed, new ones refused
	dropReplies           // requests reach the target, replies are swallowed
)

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is where clients connect instead of the target.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(client net.Conn) {
	p.mu.Lock()
	refuse := p.mode == cut || p.closed
	p.mu.Unlock()
	if refuse {
		_ = client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.mode == cut || p.closed {
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	var tap func([]byte)
	if p.tap != nil {
		tap = p.tap()
	}
	p.mu.Unlock()

	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = client.Close()
			_ = server.Close()
			p.mu.Lock()
			delete(p.conns, client)
			delete(p.conns, server)
			p.mu.Unlock()
		})
	}
	go func() { // client → target
		defer closeBoth()
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
				p.upstream.Add(int64(n))
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // target → client
		defer closeBoth()
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if tap != nil {
					tap(buf[:n])
				}
				p.mu.Lock()
				mode, delay := p.mode, p.latency
				p.mu.Unlock()
				if delay > 0 {
					time.Sleep(delay) // the fault itself: a slow link
				}
				if mode != dropReplies {
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
}

func (p *proxy) set(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == dropReplies {
		p.upstream.Store(0)
	}
}

// Cut closes every open connection and refuses new ones until Restore.
func (p *proxy) Cut() {
	p.set(cut)
	p.closeConns()
}

// DropReplies lets requests through but swallows every reply, so the
// target acts on a request whose sender never hears back.
func (p *proxy) DropReplies() { p.set(dropReplies) }

// SetLatency delays every reply chunk by d (0 removes the delay).
func (p *proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// TapReplies shows every reply byte read from the target, also those a
// fault then drops, to a reader that newReader makes for each connection
// opened from now on.
func (p *proxy) TapReplies(newReader func() func([]byte)) {
	p.mu.Lock()
	p.tap = newReader
	p.mu.Unlock()
}

// Restore passes traffic again. Connections that lost replies are closed, as
// their protocol state is broken.
func (p *proxy) Restore() {
	p.mu.Lock()
	was := p.mode
	p.mode = pass
	p.mu.Unlock()
	if was == dropReplies {
		p.closeConns()
	}
}

func (p *proxy) closeConns() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Close stops the proxy and every connection through it.
func (p *proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.closeConns()
}
