// Command image builds stevedore's multi-arch container image without a
// container engine: it cross-compiles the binary for linux/amd64 and
// linux/arm64 with the flags the Dockerfile uses, puts each in a single
// layer at the path the Dockerfile's final stage uses, and writes the OCI
// image index as an OCI layout directory and as a tar of it (an OCI
// archive), ready for `crane push` or `skopeo copy`. The result is
// reproducible: the same source, Go version, version string and
// SOURCE_DATE_EPOCH give the same index digest.
//
//	cd hack/image && go run . -version v0.1.0 -out ../../bin/image
//
// It is a module of its own so that go-containerregistry stays out of
// stevedore's dependencies. Its tests build the image and check it, and check
// that the Dockerfile describes the same image.
package main
