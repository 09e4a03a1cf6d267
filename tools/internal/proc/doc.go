// Package proc runs the repository's binaries as subprocesses. Three tools
// need the real binaries, not run() called in-process: tools/faultsuite kills
// and restarts replicas while it injects faults, tools/loadgen measures the CPU
// a service spends per request, and tools/walkthrough's test checks the README
// against the services as docker-compose.yml configures them. They share this
// harness (build, start on a free port, wait for /readyz, SIGTERM or SIGKILL)
// so that a fix to any of those steps reaches all three.
package proc
