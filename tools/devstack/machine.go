package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// machine is what make dev needs of this machine, found before anything
// starts; a test fakes its look-ups.
type machine struct {
	lookPath func(string) (string, error)
	glob     func(string) ([]string, error)
	output   func(name string, args ...string) ([]byte, error) // pg_config --bindir, python3 -c
	geteuid  func() int
	lookUser func(string) (*user.User, error)
}

func realMachine() machine {
	return machine{
		lookPath: exec.LookPath,
		glob:     filepath.Glob,
		output:   func(name string, args ...string) ([]byte, error) { return exec.Command(name, args...).CombinedOutput() },
		geteuid:  os.Geteuid,
		lookUser: user.Lookup,
	}
}

// found is what preflight found: where the Postgres server binaries are,
// whom to run them as, and the interpreter of moto_server.
type found struct {
	pgBin  string
	pgCred *syscall.Credential // nil: as the user make dev runs as
	python string              // "" when the user named an SNS/SQS endpoint
	bash   string
	aws    string
}

// pgBinDir finds a directory holding the PostgreSQL server's initdb and
// postgres: PG_BINDIR if set, then pg_config --bindir, then Debian's
// /usr/lib/postgresql/<version>/bin (the newest), then PATH. It returns
// the places it looked when none has them.
func (m machine) pgBinDir(pgBinDirEnv string) (string, []string) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if pgBinDirEnv != "" {
		if has(pgBinDirEnv) {
			return pgBinDirEnv, nil
		}
		return "", []string{"PG_BINDIR=" + pgBinDirEnv}
	}
	var looked []string
	if pgConfig, err := m.lookPath("pg_config"); err == nil {
		if out, err := m.output(pgConfig, "--bindir"); err == nil {
			dir := strings.TrimSpace(string(out))
			if has(dir) {
				return dir, nil
			}
			looked = append(looked, "pg_config --bindir ("+dir+")")
		}
	} else {
		looked = append(looked, "pg_config (not on PATH)")
	}
	debian, _ := m.glob("/usr/lib/postgresql/*/bin")
	// Newest first: /usr/lib/postgresql/16/bin before 15's.
	slices.SortFunc(debian, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range debian {
		if has(dir) {
			return dir, nil
		}
	}
	looked = append(looked, "/usr/lib/postgresql/*/bin")
	if initdb, err := m.lookPath("initdb"); err == nil && has(filepath.Dir(initdb)) {
		return filepath.Dir(initdb), nil
	}
	return "", append(looked, "PATH")
}

func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// preflight checks everything make dev needs before it starts anything, and
// names every missing piece at once: the Postgres server binaries (and, as
// root, the postgres user they must run as), python3 with moto unless
// AWS_ENDPOINT_URL names an endpoint, bash and the aws CLI for
// localstack/init-aws.sh, and every host port, with the variable that
// moves it.
func (m machine) preflight(cfg config, s *stack) (found, []string) {
	var f found
	var missing []string
	dir, looked := m.pgBinDir(cfg.pgBinDir)
	if dir == "" {
		missing = append(missing, fmt.Sprintf("no PostgreSQL server binaries (initdb, postgres): looked in %s. Install them (Debian: apt-get install postgresql) or name their directory: PG_BINDIR=/path/to/bin make dev", strings.Join(looked, ", ")))
	}
	f.pgBin = dir
	if m.geteuid() == 0 {
		// Postgres refuses to run as root; as root, run it as postgres.
		u, err := m.lookUser("postgres")
		if err != nil {
			missing = append(missing, "make dev runs as root, as which Postgres refuses to run, and there is no user postgres to run it as (Debian's postgresql package creates one; or run make dev as a normal user)")
		} else {
			uid, _ := strconv.ParseUint(u.Uid, 10, 32)
			gid, _ := strconv.ParseUint(u.Gid, 10, 32)
			f.pgCred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
	}
	if cfg.endpoint == "" {
		py, err := m.lookPath("python3")
		switch {
		case err != nil:
			missing = append(missing, "no python3 on PATH, which runs scripts/moto_server.py (the SNS/SQS endpoint): install python3 and moto (pip install 'moto[server]'), or name a running endpoint: AWS_ENDPOINT_URL=http://127.0.0.1:4566 make dev")
		default:
			if out, err := m.output(py, "-c", "import moto.server"); err != nil {
				missing = append(missing, fmt.Sprintf("python3 (%s) cannot import moto's server, which scripts/moto_server.py runs: pip install 'moto[server]', or name a running SNS/SQS endpoint: AWS_ENDPOINT_URL=http://127.0.0.1:4566 make dev (%s)", py, lastLine(out)))
			}
			f.python = py
		}
	}
	if b, err := m.lookPath("bash"); err != nil {
		missing = append(missing, "no bash on PATH, which runs localstack/init-aws.sh")
	} else {
		f.bash = b
	}
	if a, err := m.lookPath("aws"); err != nil {
		missing = append(missing, "no aws CLI on PATH, with which localstack/init-aws.sh creates the topic and the queues: install it (pip install awscli, or Debian's awscli)")
	} else {
		f.aws = a
	}
	for _, hp := range hostPorts {
		if hp.service == "localstack" && cfg.endpoint != "" {
			continue // the user's endpoint, not ours
		}
		port := s.port(hp.service, hp.target)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			other := port + 10000
			if other > 65535 {
				other = port - 10000
			}
			msg := fmt.Sprintf("%s is taken (%s, for %s): stop what listens there, or move it, e.g. %s=%d make dev (make demo then finds it)", addr, hp.variable, hp.service, hp.variable, other)
			if hp.service == "localstack" {
				msg += ", or, if it is an SNS/SQS endpoint, name it: AWS_ENDPOINT_URL=http://" + addr + " make dev"
			}
			missing = append(missing, msg)
			continue
		}
		ln.Close()
	}
	return f, missing
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// errMissing is what make dev exits with when preflight found something
// missing; the message lists each piece.
var errMissing = errors.New("cannot start")
