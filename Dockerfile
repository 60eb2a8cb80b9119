# Build: a static binary. docker_test.go builds it from exactly the files this
# context holds (git ls-files less .dockerignore), so a clean checkout builds.
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The context has no .git: pass the commit for `countersign version` and the
# countersign_build_info metric (docker build --build-arg COMMIT=$(git rev-parse HEAD) .).
ARG COMMIT=""
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/countersign/countersign/app/buildinfo.commit=${COMMIT} -X github.com/countersign/countersign/app/buildinfo.version=${VERSION}" -o /out/countersign ./cmd/countersign \
 && mkdir -p /out/data

# Run: distroless, non-root (65532), nothing but the binary and CA
# certificates. It writes only to /data (the embedded store), so it runs with a
# read-only root filesystem: docker run --read-only.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/countersign /countersign
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV COUNTERSIGN_DATA=/data/countersign.db \
    COUNTERSIGN_LISTEN=:8080
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/countersign"]
CMD ["serve"]
