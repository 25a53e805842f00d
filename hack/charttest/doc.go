// Package charttest renders the Helm chart in charts/stevedore with the Helm
// library, as `helm template` would, and checks what it produces. It is a
// module of its own so that Helm's dependencies stay out of stevedore's.
package charttest
