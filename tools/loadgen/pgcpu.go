package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresCPU is the CPU time the Postgres server behind db has used so far:
// the postmaster's own and that of its exited children (cutime, cstime), plus
// its live children (backends, autovacuum, the writers). Like the index
// counters it is a cost per row the machine's load hardly moves, where the
// rate is shared with everything else on the cores. ok is false when the
// server is not on this machine or /proc cannot tell.
func postgresCPU(ctx context.Context, db *pgxpool.Pool) (cpu time.Duration, ok bool) {
	postmaster, ok := postmasterPID(ctx, db)
	if !ok {
		return 0, false
	}
	pm, ok := procStat(postmaster)
	if !ok {
		return 0, false
	}
	ticks := pm.utime + pm.stime + pm.cutime + pm.cstime
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if c, ok := procStat(pid); ok && int(c.ppid) == postmaster {
			ticks += c.utime + c.stime
		}
	}
	// /proc counts in USER_HZ, 100 a second on every Linux this runs on.
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

// postmasterPID is the process id of the Postgres server behind db, if it
// runs on this machine: the parent of db's backend.
func postmasterPID(ctx context.Context, db *pgxpool.Pool) (int, bool) {
	var backend int
	if err := db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, false
	}
	st, ok := procStat(backend)
	if !ok {
		return 0, false
	}
	return int(st.ppid), true
}

// postgresHugePages says whether the Postgres server behind db maps its
// shared memory in huge pages (the postmaster's HugetlbPages). Without them
// every backend takes a page fault for each 4 kB of the shared buffers it
// first touches, and eight fresh relay replicas' rows cost the database about
// twice what one replica's did (docs/BENCHMARKS.md, "Huge pages"). Not known
// when the server is not on this machine or /proc cannot tell.
func postgresHugePages(ctx context.Context, db *pgxpool.Pool) hugePages {
	postmaster, ok := postmasterPID(ctx, db)
	if !ok {
		return hugePages{}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(postmaster) + "/status")
	if err != nil {
		return hugePages{}
	}
	kb, ok := hugetlbKB(string(b))
	return hugePages{on: kb > 0, known: ok}
}

// hugePages is what postgresHugePages found: on is meaningful when known.
type hugePages struct{ on, known bool }

// hugetlbKB reads the HugetlbPages line of a /proc/<pid>/status.
func hugetlbKB(status string) (int64, bool) {
	for line := range strings.SplitSeq(status, "\n") {
		if v, found := strings.CutPrefix(line, "HugetlbPages:"); found {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

type stat struct{ ppid, utime, stime, cutime, cstime int64 }

// procStat reads the fields of /proc/<pid>/stat this file needs.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 15 {
		return stat{}, false
	}
	n := func(field int) int64 { v, _ := strconv.ParseInt(f[field-3], 10, 64); return v }
	return stat{ppid: n(4), utime: n(14), stime: n(15), cutime: n(16), cstime: n(17)}, true
}
