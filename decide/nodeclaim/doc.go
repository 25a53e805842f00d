// Package nodeclaim decides the disruption signals of a single NodeClaim:
// whether it has drifted from its NodePool, whether consolidation may
// consider it yet, when it expires, and whether its node is unhealthy enough,
// for long enough, to be replaced.
//
// Every function here is pure. It reads the NodeClaim, its NodePool, its
// Node and a time passed in by the caller, and returns a verdict with the
// numbers behind it; it never calls the API server or the cloud and never
// reads a clock. The controllers under controllers/nodeclaim and
// controllers/node turn the verdicts into status conditions and deletions;
// the simulator and the read-only tools call the same functions to say why a
// node is, or is not, about to be disrupted and how long is left.
//
// What is decided elsewhere: drift that only the cloud provider can see (the
// image, subnets, security groups, node class hash) comes from
// cloud.CloudProvider.IsDrifted; which of the signalled NodeClaims are
// actually disrupted, and how many at once, is the disruption package's
// business, under the NodePool's budgets.
package nodeclaim
