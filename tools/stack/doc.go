// Package stack tests, without a Docker engine, what `docker compose up` and
// CI run: docker-compose.yml, loaded with the compose-spec library (its
// services, health checks, start order, ports and observability profile),
// its healthcheck commands, run against recorded LocalStack answers and a
// real Postgres, localstack/init-aws.sh's place in it, the Dockerfile, the
// scripts' line endings, Dependabot's configuration and the CI workflow.
// With the composestage build tag it also holds TestComposeStage, which
// tests the stack a real `docker compose up` started: scripts/compose-stage.sh
// (make compose-check, CI's compose stage) runs it, and nothing else does.
//
// It is in the tools module so that the compose library stays out of the
// services' go.mod. The services' own tests run their config loaders on the
// environment compose gives them, which they read from cmd/payments and
// cmd/ledger's testdata/compose.json; TestComposeTestdataIsTheComposeFile
// keeps those files what docker-compose.yml says.
package stack
