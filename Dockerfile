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
RUN bash scripts/build.sh -DLINALGD_BUILD_TESTS=OFF \
    && install -D -m 0755 /build/bin/linalgd /out/usr/local/bin/linalgd \
    && install -D -m 0755 /build/bin/linalgd-cli /out/usr/local/bin/linalgd-cli

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS runtime
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
    && groupadd --system --gid 10001 linalgd \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --shell /usr/sbin/nologin linalgd
COPY --from=build /out/ /
USER 10001:10001
# 50051: gRPC (Linalg, grpc.health.v1; reflection with --reflection); 9464: Prometheus /metrics.
EXPOSE 50051 9464
# (No --start-period: dockerfilelint 1.8 mis-parses it; 5 retries cover start-up.)
HEALTHCHECK --interval=15s --timeout=5s --retries=5 \
    CMD ["/usr/local/bin/linalgd-cli", "--target", "127.0.0.1:50051", "--timeout", "3s", "health"]
ENTRYPOINT ["/usr/local/bin/linalgd"]
# Plaintext on the container's address needs --insecure. For TLS, mount the
# files and give --tls-cert/--tls-key (README, "TLS") instead of --insecure.
CMD ["--listen", "0.0.0.0:50051", "--insecure", "--metrics-listen", "0.0.0.0:9464", "--log-level", "info"]
