package main

// The container image is built FROM scratch: it has no /etc/ssl/certs, so
// crypto/x509 would find no system roots and every TLS connection to AWS would
// fail. The fallback package embeds the Mozilla root bundle and registers it
// with crypto/x509; Go uses it only when the system has no roots of its own, so
// a binary run on a host with a CA store (or with SSL_CERT_FILE set) still uses
// that store.
import _ "golang.org/x/crypto/x509roots/fallback"
