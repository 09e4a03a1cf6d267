# A stand-in for the postgres image: Debian's postgresql-15 (in the shared
# rootfs, DEBIAN) behind postgres-entrypoint.sh, which keeps the official
# image's entrypoint contract. As there, initdb makes UTF8 databases (LANG; C
# sorting, like the alpine image's musl) and writes listen_addresses '*', the
# server runs as the postgres user, and SIGINT (a fast shutdown) stops it.
ARG DEBIAN
FROM ${DEBIAN}
ENV LANG=C.UTF-8 \
    PG_MAJOR=15 \
    PGDATA=/var/lib/postgresql/data \
    PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Debian's package made a cluster of its own on install: the image has none.
RUN set -eu; \
    rm -rf /var/lib/postgresql/15 /etc/postgresql/15; \
    sed -ri "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" /usr/share/postgresql/15/postgresql.conf.sample; \
    grep -F "listen_addresses = '*'" /usr/share/postgresql/15/postgresql.conf.sample; \
    mkdir -p /docker-entrypoint-initdb.d "$PGDATA" /var/run/postgresql; \
    chown postgres:postgres "$PGDATA" /var/run/postgresql; \
    chmod 1777 "$PGDATA"; chmod 3777 /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
