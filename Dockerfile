# Build: a static binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/countersign ./cmd/countersign \
 && mkdir -p /out/data

# Run: distroless, non-root, nothing but the binary and CA certificates.
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
