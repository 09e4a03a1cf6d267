# A stand-in for the localstack image: moto behind localstack.py (LocalStack's
# port, init hooks and /_localstack answers) in the shared Debian rootfs
# (DEBIAN), which has curl for the compose healthcheck. Moto, the AWS CLI and
# their Python come from the machine (python/, copied by compose-stage.sh to
# PYTHON_PREFIX, the path it was built for), so that the container runs the
# moto scripts/moto_server.py was written against.
ARG DEBIAN
FROM ${DEBIAN}
ARG PYTHON_PREFIX
COPY python ${PYTHON_PREFIX}
ENV PATH=${PYTHON_PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    MOTO_ACCOUNT_ID=000000000000 \
    AWS_DEFAULT_REGION=us-east-1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY awslocal /usr/local/bin/awslocal
COPY moto_server.py localstack.py /opt/localstack-standin/
RUN set -eu; \
    ln -sf "${PYTHON_PREFIX}/bin/python3" /usr/local/bin/python3; \
    mkdir -p /etc/localstack/init/ready.d; \
    cd /opt/localstack-standin && python3 -c 'import localstack, moto_server'; \
    aws --version; curl --version | head -1
EXPOSE 4566
WORKDIR /opt/localstack-standin
ENTRYPOINT ["python3", "/opt/localstack-standin/localstack.py"]
