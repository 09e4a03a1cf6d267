# A stand-in for gcr.io/distroless/static-debian12:nonroot: the files a static
# binary running as nonroot expects and nothing else — no shell, no package
# manager. Built from the Debian rootfs the other stand-ins share (DEBIAN).
ARG DEBIAN
FROM ${DEBIAN} AS files
RUN set -eu; \
    mkdir -p /out/etc/ssl/certs /out/usr/share /out/tmp /out/home/nonroot /out/root; \
    printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
        'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
        'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >/out/etc/passwd; \
    printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'tty:x:5:' 'staff:x:50:' 'nonroot:x:65532:' >/out/etc/group; \
    cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/; \
    cp -a /usr/share/zoneinfo /out/usr/share/; \
    cp /etc/os-release /etc/nsswitch.conf /out/etc/; \
    chmod 1777 /out/tmp; chmod 700 /out/root /out/home/nonroot; \
    chown 65532:65532 /out/home/nonroot

FROM scratch
COPY --from=files /out/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532
WORKDIR /home/nonroot
