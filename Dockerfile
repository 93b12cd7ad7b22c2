# syntax=docker/dockerfile:1
# throttled's image for those with a container daemon (docker build, podman build, BuildKit):
#   docker buildx build --platform linux/amd64,linux/arm64 -t throttled .
# make image writes the same image without one (deploy/image): the same user, ports, volume,
# entrypoint and configuration (deploy/image/throttled.conf).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
	go build -trimpath -ldflags='-s -w' -o /out/throttled ./cmd/throttled && \
	mkdir -p /out/data

# distroless's static image: CA certificates, /etc/passwd with nonroot (65532), no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/throttled /usr/local/bin/throttled
COPY deploy/image/throttled.conf /etc/throttled/throttled.conf
COPY --from=build --chown=65532:65532 --chmod=0700 /out/data /data
USER 65532:65532
WORKDIR /data
VOLUME /data
# RESP, http-port, grpc-port (on once a ratelimit-config is mounted), metrics-port.
EXPOSE 6379/tcp 8080/tcp 8081/tcp 9121/tcp
STOPSIGNAL SIGTERM
LABEL org.opencontainers.image.title="throttled" \
	org.opencontainers.image.description="A rate-limit server that speaks the Redis protocol" \
	org.opencontainers.image.source="https://github.com/throttledhq/throttled" \
	org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/usr/local/bin/throttled", "/etc/throttled/throttled.conf"]
