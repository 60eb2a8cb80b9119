# Build: a static binary. docker_test.go builds it from exactly the files this
# context holds (git ls-files less .dockerignore), so a clean checkout builds.
#
# Base images are named in full (Podman and Buildah refuse short names) and
# pinned by digest, the tag kept beside it for the reader: a retagged upstream
# image cannot change what is built. Keep the golang tag equal to go.mod's go
# line (the official image sets GOTOOLCHAIN=local). To move to a newer base,
# take its digest with `docker buildx imagetools inspect IMAGE:TAG` (or
# `skopeo inspect docker://IMAGE:TAG`) and change tag and digest together.
FROM docker.io/library/golang:1.26.8@sha256:6c2a5538f964f1c82f97ad14988bf05de100d922d159d0e398b54c7b0ca0c6c9 AS build
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
FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
COPY --from=build /out/countersign /countersign
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV COUNTERSIGN_DATA=/data/countersign.db \
    COUNTERSIGN_LISTEN=:8080
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/countersign"]
CMD ["serve"]
