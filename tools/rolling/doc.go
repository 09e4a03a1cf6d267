// Package rolling proves that a release can roll: that every migration is
// expand-then-contract. Its test builds the previous release's payments and
// ledger (the commit deploy/PREVIOUS_RELEASE names, a release of this module;
// before a project's first release it names none, and the test skips) beside
// this checkout's, applies this checkout's migrations under the running old
// binaries, then runs old and new side by side on one database and one queue,
// as a Kubernetes rolling update does for a while, each writing what the other
// reads, then each order the Deployments may roll in, and ends with the new
// release alone. Event signing is on as docs/SECURITY.md turns it on: the new
// ledger accepts the old payments' unsigned events while
// PAYMENTS_UNSIGNED_EVENTS=accept says to, the old ledger takes the new
// payments' signed ones, and once the transition is over an unsigned event
// goes to the DLQ. docs/FORKING.md ("Writing a migration that rolls") says
// how to write a migration that passes.
package rolling
