// Package rolling proves that a release can roll: that every migration is
// expand-then-contract. Its test builds the previous release's payments and
// ledger (the commit deploy/PREVIOUS_RELEASE names, a release of this module;
// before a project's first release it names none, and the test skips) beside
// this checkout's, applies this checkout's migrations under the running old
// binaries, then runs old and new side by side on one database and one queue,
// as a Kubernetes rolling update does for a while, each writing what the other
// reads. docs/FORKING.md ("Writing a migration that rolls") says how to write
// a migration that passes.
package rolling
