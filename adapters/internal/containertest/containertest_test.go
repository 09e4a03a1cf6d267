package containertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// noReaper is testcontainers' configuration with TESTCONTAINERS_RYUK_DISABLED=true.
var noReaper = testcontainers.TestcontainersConfig{RyukDisabled: true}

const (
	variable = "TESTCONTAINERS_EXAMPLE_IMAGE"
	pinned   = "example/db:1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestImageIsTheVariableElseThePinnedOne(t *testing.T) {
	t.Setenv(variable, "")
	if got := Image(variable, pinned); got != pinned {
		t.Errorf("unset: %q, want the pinned %q", got, pinned)
	}
	t.Setenv(variable, "registry.local/db:standin")
	if got := Image(variable, pinned); got != "registry.local/db:standin" {
		t.Errorf("set: %q, want the variable's image", got)
	}
}

// Each way of not reaching an engine gets its own reason, naming the
// address, instead of the last place testcontainers looked ("rootless
// Docker not found").
func TestReadySaysWhyNoEngineAnswers(t *testing.T) {
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.sock")
	l, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, and nothing listens on it

	for _, tc := range []struct {
		name, host, want string
	}{
		{"no socket", "unix://" + filepath.Join(dir, "absent.sock"),
			"no Docker engine answers at unix://" + filepath.Join(dir, "absent.sock") + ": the socket does not exist (is dockerd running?)"},
		{"nothing listens", "unix://" + refused,
			"no Docker engine answers at unix://" + refused + " (is dockerd running?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", tc.host)
			_, err := Ready(context.Background(), variable, pinned)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Ready: %v, want %q", err, tc.want)
			}
		})
	}
}

// Root may open any socket, so the permission case is shown on the error a
// dial returns to anyone else.
func TestUnreachableNamesAPermissionProblem(t *testing.T) {
	const host = "unix:///var/run/docker.sock"
	err := unreachable(host, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)})
	if want := "docker socket permission denied: " + host; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want it to start %q", err, want)
	}
}

// fakeEngine serves the part of the Docker API Ready uses on a unix socket:
// the images in have are there, and every pull fails as one does with no
// registry in reach.
func fakeEngine(t *testing.T, have ...string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		switch {
		case strings.HasSuffix(path, "/_ping"):
			w.Header().Set("API-Version", client.MaxAPIVersion)
			fmt.Fprint(w, "OK")
		case strings.Contains(path, "/images/") && strings.HasSuffix(path, "/json"):
			ref := strings.TrimSuffix(path[strings.Index(path, "/images/")+len("/images/"):], "/json")
			for _, h := range have {
				if h == ref {
					fmt.Fprintf(w, `{"Id":"sha256:%064d"}`, 1)
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"message":"No such image: %s"}`, ref)
		case strings.HasSuffix(path, "/images/create"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"status":"Pulling from example/db"}`)
			fmt.Fprintln(w, `{"errorDetail":{"message":"dial tcp: lookup registry.example: no such host"},"error":"dial tcp: lookup registry.example: no such host"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return "unix://" + sock
}

func TestReadyNamesTheImageThatCouldNotBePulled(t *testing.T) {
	host := fakeEngine(t)
	t.Setenv("DOCKER_HOST", host)
	t.Setenv(variable, "")
	_, err := Ready(context.Background(), variable, pinned)
	want := "image " + pinned + " is not on the Docker engine at " + host + " and could not be pulled"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "no such host") || !strings.HasSuffix(err.Error(), "set "+variable+" to an image the engine has") {
		t.Errorf("Ready: %v\nwant %q…, the engine's reason and the variable to set", err, want)
	}
}

func TestReadyChecksTheReapersImageToo(t *testing.T) {
	host := fakeEngine(t, "example/db:standin")
	t.Setenv("DOCKER_HOST", host)
	t.Setenv(variable, "example/db:standin")
	_, err := ready(context.Background(), variable, pinned, testcontainers.TestcontainersConfig{})
	if err == nil || !strings.Contains(err.Error(), "ryuk") || !strings.Contains(err.Error(), ryukDisabled+"=true") {
		t.Errorf("Ready: %v, want the reaper's image named and %s suggested", err, ryukDisabled)
	}

	image, err := ready(context.Background(), variable, pinned, noReaper)
	if err != nil || image != "example/db:standin" {
		t.Errorf("Ready with the image there and no reaper: %q, %v; want the variable's image", image, err)
	}
}

// The tests dial published ports on loopback unless told otherwise; an
// address a person set is kept.
func TestReadyPointsTestcontainersAtLoopback(t *testing.T) {
	host := fakeEngine(t, "example/db:standin")
	t.Setenv("DOCKER_HOST", host)
	t.Setenv(variable, "example/db:standin")

	t.Setenv(HostOverride, "")
	os.Unsetenv(HostOverride) // t.Setenv restores it at the end
	if _, err := ready(context.Background(), variable, pinned, noReaper); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv(HostOverride); got != "127.0.0.1" {
		t.Errorf("%s = %q after Ready, want 127.0.0.1", HostOverride, got)
	}

	t.Setenv(HostOverride, "127.0.0.2")
	if _, err := ready(context.Background(), variable, pinned, noReaper); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv(HostOverride); got != "127.0.0.2" {
		t.Errorf("%s = %q after Ready, want the 127.0.0.2 it was set to", HostOverride, got)
	}
}

// A failed dial is wrapped, so the reason keeps what the system said.
func TestUnreachableKeepsAnUnknownCause(t *testing.T) {
	cause := errors.New("network is unreachable")
	if err := unreachable("tcp://127.0.0.1:2375", cause); !errors.Is(err, cause) {
		t.Errorf("got %v, want it to wrap %v", err, cause)
	}
}
