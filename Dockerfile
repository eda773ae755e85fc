# linalgd container image: build on NVIDIA's CUDA 13.0 devel image, run on the
# runtime image (Ubuntu 24.04). Every step is one that CI runs too:
# scripts/install-deps.sh, then scripts/build.sh.
#
#   docker build -t linalgd:0.1.0 .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 linalgd:0.1.0
#   docker run -e LINALGD_DISABLE_GPU=1 -p 50051:50051 linalgd:0.1.0   # CPU only
ARG CUDA_VERSION=13.0.1

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
# Only the sources the build needs (not build trees or node_modules).
COPY CMakeLists.txt ./
COPY cmake cmake
COPY proto proto
COPY common common
COPY server server
COPY client client
COPY tools tools
COPY scripts scripts
ENV BUILD_DIR=/build LINALGD_WITH_CUDA=ON CUDACXX=/usr/local/cuda/bin/nvcc
# No .git in the build context: --version reports the commit given here.
ARG REVISION=unknown
COPY LICENSE THIRD_PARTY_NOTICES ./
# The runtime stage installs only the packages whose libraries these two
# binaries load (scripts/runtime-packages.sh: ldd through dpkg -S, on the
# same Ubuntu as the runtime image).
RUN bash scripts/build.sh -DLINALGD_BUILD_TESTS=OFF -DLINALGD_GIT_COMMIT="${REVISION}" \
    && install -D -m 0755 /build/bin/linalgd /out/usr/local/bin/linalgd \
    && install -D -m 0755 /build/bin/linalgd-cli /out/usr/local/bin/linalgd-cli \
    && install -D -m 0644 -t /out/usr/share/doc/linalgd LICENSE THIRD_PARTY_NOTICES \
    && bash scripts/runtime-packages.sh /build/bin/linalgd > /tmp/server-packages.txt \
    && bash scripts/runtime-packages.sh /build/bin/linalgd-cli > /tmp/cli-packages.txt \
    && sort -u /tmp/server-packages.txt /tmp/cli-packages.txt > /runtime-packages.txt

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="linalgd" \
      org.opencontainers.image.description="gRPC linear-algebra service on CUDA GPUs and the CPU" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0 AND GPL-2.0-or-later" \
      org.opencontainers.image.base.name="nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04"
COPY scripts/install-deps.sh /tmp/install-deps.sh
COPY --from=build /runtime-packages.txt /tmp/runtime-packages.txt
RUN bash /tmp/install-deps.sh --runtime /tmp/runtime-packages.txt \
    && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh /tmp/runtime-packages.txt \
    && groupadd --system --gid 10001 linalgd \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --shell /usr/sbin/nologin linalgd
COPY --from=build /out/ /
USER 10001:10001
# 50051: gRPC (Linalg, grpc.health.v1; reflection with --reflection); 9464: Prometheus /metrics.
EXPOSE 50051 9464
# The health check is linalgd-cli health (grpc.health.v1, which needs no
# token). The CLI takes its address and TLS files from the environment, so
# the same check follows the server's flags: LINALGD_TARGET when the server
# listens elsewhere; with --tls-cert, LINALGD_TLS_CA=the CA file (mounted;
# the server's certificate must name 127.0.0.1, or set LINALGD_TARGET to a
# host name it names that resolves to this container); with
# --tls-client-ca, LINALGD_TLS_CERT and LINALGD_TLS_KEY too. The line is run
# as written against plaintext, TLS and mTLS servers by
# tests/python/test_tls.py.
# (No --start-period: dockerfilelint 1.8 mis-parses it; 5 retries cover start-up.)
ENV LINALGD_TARGET=127.0.0.1:50051
HEALTHCHECK --interval=15s --timeout=5s --retries=5 \
    CMD ["/usr/local/bin/linalgd-cli", "--timeout", "3s", "health"]
ENTRYPOINT ["/usr/local/bin/linalgd"]
# Plaintext on the container's address needs --insecure. For TLS, mount the
# files and give --tls-cert/--tls-key (README, "TLS") instead of --insecure.
CMD ["--listen", "0.0.0.0:50051", "--insecure", "--metrics-listen", "0.0.0.0:9464", "--log-level", "info"]
