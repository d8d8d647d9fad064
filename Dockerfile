# pgceiling in a container: the binary plus Debian's PostgreSQL server binaries, so the
# embedded throwaway server (no --dsn) works as on a Debian machine; with --dsn the
# server binaries are simply never used.
#
#   docker build -t pgceiling .
#   docker run --rm --shm-size=1g -v "$PWD:/out" pgceiling search            # main job, embedded server
#   docker run --rm -v "$PWD:/out" pgceiling search --dsn 'postgres://me@db/bench'
#
# Results files are written to the working directory /out (mount it to keep them).
# The embedded server runs as the image's `postgres` user (PostgreSQL refuses root);
# --shm-size lifts Docker's 64 MB /dev/shm, which PostgreSQL's parallel workers use.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /pgceiling ./cmd/pgceiling

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /pgceiling /usr/local/bin/pgceiling
WORKDIR /out
ENTRYPOINT ["/usr/local/bin/pgceiling"]
CMD ["--help"]
