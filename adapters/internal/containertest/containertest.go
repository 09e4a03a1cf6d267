// Package containertest readies the Docker engine that pgtest and awstest start
// their containers on with testcontainers-go: which image a run starts, the
// address the tests dial, and, when no container can be had, a reason a
// person can act on ("no Docker engine answers at …", "docker socket
// permission denied", "image … could not be pulled") instead of the last
// place testcontainers happened to look.
package containertest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// HostOverride is testcontainers-go's variable for the address at which the
// tests reach a container's published ports. Ready sets it to loopback when
// it is unset: on a host with a /.dockerenv file testcontainers believes it
// runs inside a container and dials the default gateway instead, which is
// slow to fail and sends test traffic off the machine.
const HostOverride = "TESTCONTAINERS_HOST_OVERRIDE"

// ryukDisabled is testcontainers-go's variable that starts no reaper
// container; named in the reason when the reaper's image is missing.
const ryukDisabled = "TESTCONTAINERS_RYUK_DISABLED"

// Image is the image reference in the environment variable named variable,
// or pinned when it is unset: a machine that cannot pull pinned (no registry)
// points the variable at an image its engine has.
func Image(variable, pinned string) string {
	if ref := os.Getenv(variable); ref != "" {
		return ref
	}
	return pinned
}

// Ready checks that a container of the image Image(variable, pinned) names
// can be started and returns that image: a Docker engine answers, and the
// image, and the reaper's image that testcontainers starts beside it, are on
// the engine or can be pulled now. It points testcontainers at loopback
// (HostOverride) first. Its error is the reason no container can be had.
//
// Pulling here, once and without retrying, keeps a missing image from
// costing each test binary the minutes testcontainers spends retrying a
// registry that cannot be reached.
func Ready(ctx context.Context, variable, pinned string) (image string, err error) {
	return ready(ctx, variable, pinned, testcontainers.ReadConfig())
}

// ready is Ready with testcontainers' configuration, which it reads once a
// process, given.
func ready(ctx context.Context, variable, pinned string, cfg testcontainers.TestcontainersConfig) (image string, err error) {
	if _, set := os.LookupEnv(HostOverride); !set {
		if err := os.Setenv(HostOverride, "127.0.0.1"); err != nil {
			return "", err
		}
	}
	image = Image(variable, pinned)
	cli, host, err := engine(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if cfg.Config.HubImageNamePrefix != "" {
		// testcontainers rewrites the names to a mirror of its own; let it.
		return image, nil
	}
	if err := available(ctx, cli, host, image, "set "+variable+" to an image the engine has"); err != nil {
		return "", err
	}
	if !cfg.RyukDisabled {
		//lint:ignore SA1019 the reaper's image, which testcontainers-go exports under this name alone
		reaper := testcontainers.ReaperDefaultImage
		if err := available(ctx, cli, host, reaper, "load it into the engine, or set "+ryukDisabled+"=true to start no reaper (the tests remove their containers themselves)"); err != nil {
			return "", err
		}
	}
	return image, nil
}

// engine returns a client of the engine testcontainers will use and its
// address. DOCKER_HOST, or the default socket when it is unset, is asked
// first; when it does not answer, testcontainers' own search (a rootless
// engine's socket, ~/.testcontainers.properties) may still find one, and
// when that fails too the error says why the first did not answer.
func engine(ctx context.Context) (_ *client.Client, host string, err error) {
	host = os.Getenv("DOCKER_HOST")
	if host == "" {
		host = client.DefaultDockerHost
	}
	why := reach(ctx, host)
	if why == nil {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return nil, host, fmt.Errorf("docker client for %s: %w", host, err)
		}
		if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			_ = cli.Close()
			return nil, host, fmt.Errorf("the Docker engine at %s does not answer: %w", host, err)
		}
		return cli, host, nil
	}
	if os.Getenv("DOCKER_HOST") != "" {
		return nil, host, why
	}
	if tc := discovered(ctx); tc != nil {
		return tc.Client, tc.DaemonHost(), nil
	}
	return nil, host, why
}

// discovered is the engine testcontainers' search finds, or nil.
func discovered(ctx context.Context) (tc *testcontainers.DockerClient) {
	// testcontainers panics rather than erroring on some of its paths when
	// it finds no engine.
	defer func() {
		if recover() != nil {
			tc = nil
		}
	}()
	tc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil
	}
	if _, err := tc.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = tc.Close()
		return nil
	}
	return tc
}

// reach dials the engine's address and says, when nothing answers, why, in
// the words a person acts on: nothing listens (start dockerd), or this user
// may not use the socket.
func reach(ctx context.Context, host string) error {
	u, err := url.Parse(host)
	if err != nil {
		return fmt.Errorf("DOCKER_HOST %q is not a URL: %w", host, err)
	}
	var network, addr string
	switch u.Scheme {
	case "unix":
		network, addr = "unix", u.Path
		if _, err := os.Stat(addr); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no Docker engine answers at %s: the socket does not exist (is dockerd running?)", host)
		}
	case "tcp", "http", "https":
		network, addr = "tcp", u.Host
	default: // ssh://, npipe://: the Docker client knows them, this check does not
		return nil
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return unreachable(host, err)
	}
	return conn.Close()
}

// unreachable is why the engine at host did not take a connection: err.
func unreachable(host string, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("no Docker engine answers at %s (is dockerd running?)", host)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("docker socket permission denied: %s (run as a member of its group, or set DOCKER_HOST to an engine this user may use)", host)
	default:
		return fmt.Errorf("no Docker engine answers at %s: %w", host, err)
	}
}

// available makes sure the engine has image ref, pulling it once if not.
func available(ctx context.Context, cli *client.Client, host, ref, hint string) error {
	_, err := cli.ImageInspect(ctx, ref)
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("the Docker engine at %s cannot inspect image %s: %w", host, ref, err)
	}
	pull, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err == nil {
		err = pull.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("image %s is not on the Docker engine at %s and could not be pulled (%v); %s", ref, host, err, hint)
	}
	return nil
}
