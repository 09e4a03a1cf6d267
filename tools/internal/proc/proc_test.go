package proc

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain turns the test binary into the service under test when
// PROC_TEST_HELPER is set, so the tests start a real subprocess without
// building one.
func TestMain(m *testing.M) {
	switch os.Getenv("PROC_TEST_HELPER") {
	case "":
		os.Exit(m.Run())
	case "serve":
		os.Exit(serve())
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: cannot reach the database")
		os.Exit(3)
	}
	os.Exit(2)
}

// serve is a stand-in service: on OPS_ADDR, /readyz answers 503 for its
// first 300ms, as a service does while it connects and migrates, then 200;
// on HTTP_ADDR, /spin burns CPU for 300ms. It exits 0 on SIGTERM and says so
// on stdout.
func serve() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	readyAt := time.Now().Add(300 * time.Millisecond)
	ops := http.NewServeMux()
	ops.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if time.Now().Before(readyAt) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	opsSrv := &http.Server{Addr: os.Getenv("OPS_ADDR"), Handler: ops}
	go func() { _ = opsSrv.ListenAndServe() }() // closed below, before the exit
	defer opsSrv.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/spin", func(w http.ResponseWriter, r *http.Request) {
		n := 0
		for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			n++
		}
		fmt.Fprint(w, n)
	})
	srv := &http.Server{Addr: os.Getenv("HTTP_ADDR"), Handler: mux}
	go func() {
		<-ctx.Done()
		fmt.Println("got SIGTERM")
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func helper(t *testing.T, mode string) *Process {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := New("helper", bin, filepath.Join(t.TempDir(), "helper.log"), append(os.Environ(), "PROC_TEST_HELPER="+mode))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func readyz(p *Process) (int, error) {
	res, err := http.Get("http://" + p.OpsAddr() + "/readyz")
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

func TestStartWaitsForReadyzAndStopSendsSIGTERM(t *testing.T) {
	t.Parallel()
	p := helper(t, "serve")
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if status, err := readyz(p); status != http.StatusOK {
		t.Fatalf("right after Start, /readyz: got %d %v, want 200", status, err)
	}
	if !p.Alive() || p.Gen() != 1 {
		t.Errorf("after Start: got Alive %v, Gen %d; want true, 1", p.Alive(), p.Gen())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if p.Alive() {
		t.Error("still alive after Stop")
	}
	if log := p.Tail(10); !strings.Contains(log, "got SIGTERM") {
		t.Errorf("the log does not show a SIGTERM:\n%s", log)
	}
}

func TestKillThenStartAgainOnTheSameAddress(t *testing.T) {
	t.Parallel()
	p := helper(t, "serve")
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if p.Alive() {
		t.Fatal("still alive after Kill")
	}
	if _, err := readyz(p); err == nil {
		t.Error("something still answers on the address after Kill")
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after Kill: got %v, want nil (nothing was running)", err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if status, err := readyz(p); status != http.StatusOK || p.Gen() != 2 {
		t.Errorf("after a restart: got /readyz %d %v, Gen %d; want 200, 2", status, err, p.Gen())
	}
	if log := p.Tail(100); strings.Count(log, "=== helper incarnation") != 2 {
		t.Errorf("want two incarnations in the log, got:\n%s", log)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func TestStartFailsFastWithTheLogWhenTheProcessExits(t *testing.T) {
	t.Parallel()
	p := helper(t, "crash")
	began := time.Now()
	err := p.Start(t.Context())
	if err == nil {
		t.Fatal("Start succeeded for a process that exits")
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Start took %s to notice the exit; want it to fail fast", took)
	}
	for _, want := range []string{"exit status 3", "boom: cannot reach the database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestCPUTimeGrowsWithWork(t *testing.T) {
	t.Parallel()
	p := helper(t, "serve")
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := p.CPUTime()
	res, err := http.Get("http://" + p.Addr() + "/spin")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if after := p.CPUTime(); after <= before {
		t.Errorf("CPUTime after 300ms of spinning: got %s, want more than %s", after, before)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if got := p.CPUTime(); got != 0 {
		t.Errorf("CPUTime of a stopped process: got %s, want 0", got)
	}
}

func TestNilProcessNeverRuns(t *testing.T) {
	var p *Process
	if p.Alive() || p.CPUTime() != 0 || p.Stop() != nil {
		t.Error("a nil *Process looks as if it ran")
	}
	p.Kill()
}

// Build links a service with the dependency versions the services' go.mod
// selects, not those the tools module's heavier dependencies would raise
// some of them to: every version the binary records is the services'.
func TestBuildLinksTheServicesModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build of cmd/ledger")
	}
	bin, err := Build(t.Context(), t.TempDir(), "ledger")
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", services).Output()
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
	list.Dir, list.Env = strings.TrimSpace(string(out)), append(os.Environ(), "GOWORK=off")
	all, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	selected := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(all)), "\n") {
		path, version, _ := strings.Cut(line, " ")
		selected[path] = version
	}
	for _, dep := range info.Deps {
		if want := selected[dep.Path]; dep.Version != want {
			t.Errorf("the binary links %s %s, the services' go.mod selects %q", dep.Path, dep.Version, want)
		}
	}
	if len(info.Deps) == 0 {
		t.Error("the binary records no dependency")
	}
}
