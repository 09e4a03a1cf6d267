package awstest

import (
	"slices"
	"testing"

	dockercontainer "github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
)

// The LocalStack module mounts the Docker socket into the container with a
// host config modifier; the option applied after it (localstack.Run applies
// the caller's options after its own) takes the socket out and leaves any
// other mount alone.
func TestLocalStackGetsNoDockerSocket(t *testing.T) {
	var req testcontainers.GenericContainerRequest
	module := testcontainers.WithHostConfigModifier(func(hc *dockercontainer.HostConfig) {
		hc.Binds = []string{"/var/run/docker.sock:/var/run/docker.sock", "/srv/data:/data"}
	})
	for _, opt := range []testcontainers.CustomizeRequestOption{module, withoutDockerSocket()} {
		if err := opt(&req); err != nil {
			t.Fatal(err)
		}
	}
	var hc dockercontainer.HostConfig
	req.HostConfigModifier(&hc)
	if want := []string{"/srv/data:/data"}; !slices.Equal(hc.Binds, want) {
		t.Errorf("binds = %v, want %v", hc.Binds, want)
	}
}
