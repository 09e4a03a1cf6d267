package main

import "strings"

// expectedSkip is a skip that is a state the project is expected to be in,
// not a test that could not run: CI lets it pass. It names one test and the
// start of the reason that test gives in that state, so that no other skip,
// of that test or of another, passes.
type expectedSkip struct {
	pkg    string // the package's path in the tools module, which a fork renames
	test   string
	reason string // the start of the reason
}

// expectedSkips lists every skip that CI lets pass.
var expectedSkips = []expectedSkip{{
	// A project before the first release of its schema has no release to
	// roll from, and a fork is one until it ships: scripts/fork.sh writes none in
	// deploy/PREVIOUS_RELEASE, and docs/FORKING.md says to write the first
	// release's commit there. Any other skip of the test fails CI, as a
	// previous release missing from a shallow clone does.
	pkg:    "rolling",
	test:   "TestPreviousReleaseRunsOnTheNewSchema",
	reason: "no previous release to roll from: deploy/PREVIOUS_RELEASE is none",
}}

// isExpected reports whether test of package pkg, skipped for reason, is a
// skip of expectedSkips.
func isExpected(pkg, test, reason string) bool {
	for _, e := range expectedSkips {
		if strings.HasSuffix(pkg, "/"+toolsDir+"/"+e.pkg) && test == e.test && strings.HasPrefix(reason, e.reason) {
			return true
		}
	}
	return false
}
