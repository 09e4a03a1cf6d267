// Package apireference tests the API reference a person reads in a browser:
// the pages scripts/api-docs.sh (make api-docs) renders from each OpenAPI
// document in api/, loaded in headless Chromium from file://, with nothing
// reachable on the network. It has tests only.
package apireference
