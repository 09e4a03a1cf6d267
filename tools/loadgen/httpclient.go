package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// poster sends POST requests with a JSON body over one kept-alive HTTP/1.1
// connection, the way wrk and pgbench drive a server: the request is written
// with one write and the response read on the same goroutine.
//
// Why not http.Client: its Transport hands every request between the
// caller's goroutine and a read loop and a write loop of its own, CPU per
// request taken from the cores the server and Postgres need (how much:
// docs/BENCHMARKS.md). A load generator should be the cheapest thing on
// the machine; the response is still parsed by net/http (ReadResponse).
//
// A poster is not safe for concurrent use: each worker has its own.
type poster struct {
	addr string // host:port
	host string // the Host header
	path string
	key  string // the API key, sent as Authorization: Bearer

	conn net.Conn
	r    *bufio.Reader
	buf  []byte
}

// requestTimeout bounds one request, so a server that stops answering fails
// the operation instead of hanging the phase.
const requestTimeout = 30 * time.Second

func newPoster(rawURL, key string) (*poster, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("loadgen speaks plain HTTP only, not %q", u.Scheme)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &poster{addr: addr, host: u.Host, path: u.RequestURI(), key: key}, nil
}

// post sends body and returns the response's status code; the body is read
// and discarded. Any error closes the connection; the next call redials.
func (p *poster) post(body []byte) (int, error) {
	status, _, err := p.postTo(p.path, body, false)
	return status, err
}

// postTo sends body to path (on the poster's host) and returns the status
// and, with keep, the response's body. It is post for a request whose path
// depends on an earlier answer: a capture of the payment just authorized.
func (p *poster) postTo(path string, body []byte, keep bool) (int, []byte, error) {
	if p.conn == nil {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			return 0, nil, err
		}
		p.conn, p.r = c, bufio.NewReaderSize(c, 4096)
	}
	p.buf = append(p.buf[:0], "POST "...)
	p.buf = append(p.buf, path...)
	p.buf = append(p.buf, " HTTP/1.1\r\nHost: "...)
	p.buf = append(p.buf, p.host...)
	if p.key != "" {
		p.buf = append(p.buf, "\r\nAuthorization: Bearer "...)
		p.buf = append(p.buf, p.key...)
	}
	p.buf = append(p.buf, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	p.buf = strconv.AppendInt(p.buf, int64(len(body)), 10)
	p.buf = append(p.buf, "\r\n\r\n"...)
	p.buf = append(p.buf, body...)

	status, resBody, alive, err := p.roundTrip(keep)
	if err != nil || !alive {
		p.close()
	}
	return status, resBody, err
}

func (p *poster) roundTrip(keep bool) (status int, body []byte, keepAlive bool, err error) {
	if err := p.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, nil, false, err
	}
	if _, err := p.conn.Write(p.buf); err != nil {
		return 0, nil, false, err
	}
	res, err := http.ReadResponse(p.r, nil)
	if err != nil {
		return 0, nil, false, err
	}
	if keep {
		body, err = io.ReadAll(res.Body)
	} else {
		_, err = io.Copy(io.Discard, res.Body)
	}
	res.Body.Close()
	return res.StatusCode, body, err == nil && !res.Close, err
}

func (p *poster) close() {
	if p.conn != nil {
		p.conn.Close()
		p.conn, p.r = nil, nil
	}
}
