# A stand-in for the golang image: Debian 12 (DEBIAN, a debootstrapped rootfs)
# with the machine's Go toolchain at /usr/local/go, set up as the official
# image is (GOPATH /go, both bin directories on the PATH), plus a file GOPROXY
# (goproxy/, made by compose-stage.sh from the module cache) that holds the
# modules the project's two builds download: the build needs no network, and
# a module missing from it fails the build instead of being fetched.
ARG DEBIAN
FROM ${DEBIAN}
COPY go /usr/local/go
COPY goproxy /usr/local/share/goproxy
# go.sum verifies every module; no checksum database is reachable from here.
ENV GOPATH=/go \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GOTOOLCHAIN=local \
    GOPROXY=file:///usr/local/share/goproxy \
    GOSUMDB=off
RUN mkdir -p /go/src /go/bin && chmod -R 1777 /go && go version
WORKDIR /go
