package launch

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/userdata"
)

// Cluster is what user data says about the cluster nodes join.
type Cluster struct {
	Name     string
	Endpoint string
	// CABundle is the cluster CA certificate, base64-encoded PEM.
	CABundle    string
	ServiceCIDR string
	DNS         []string
}

// StandInCluster stands for the cluster where it is not known (stevedore
// validate, plan and simulate check node classes before any cluster is at
// hand): an EKS cluster with a short name, an endpoint of the form and
// length EKS gives (https://<32 hex digits>.gr7.<region>.eks.amazonaws.com)
// and a CA bundle of 1,368 characters, at the low end of the sizes of EKS
// cluster CA bundles (base64 of the PEM of a 2048-bit RSA certificate,
// about 1,370 to 1,480 characters). User data measured with it is what a
// typical EKS cluster gives; the controller measures with the real cluster,
// whose name and CA bundle may make it some bytes longer or shorter.
var StandInCluster = Cluster{
	Name:        "cluster",
	Endpoint:    "https://" + strings.Repeat("0", 32) + ".gr7.us-east-1.eks.amazonaws.com",
	CABundle:    strings.Repeat("A", 1368),
	ServiceCIDR: "10.100.0.0/16",
	DNS:         []string{"10.100.0.10"},
}

// CheckUserData reports user data of the node class that EC2 would refuse
// for its size: the user data stevedore sends for it, spec.userData merged
// for its AMI family with the cluster's identity (fields left empty in c
// are StandInCluster's), before the labels and taints of a NodePool and
// the pod limit of an instance type are added. It returns nil when the user
// data fits, and also when it cannot be generated at all (invalid TOML for
// Bottlerocket, say), which a launch reports. The cache may be nil.
func CheckUserData(nc *awsv1.EC2NodeClass, c Cluster, cache *UserDataCache) *userdata.SizeError {
	if nc.Spec.UserData == nil {
		// stevedore's own part alone is far from the limit.
		return nil
	}
	if c.Name == "" {
		c.Name = StandInCluster.Name
	}
	if c.Endpoint == "" {
		c.Endpoint = StandInCluster.Endpoint
	}
	if c.CABundle == "" {
		c.CABundle = StandInCluster.CABundle
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = StandInCluster.ServiceCIDR
	}
	if len(c.DNS) == 0 {
		c.DNS = StandInCluster.DNS
	}
	_, err := cache.generate(amifamily.ResolvedFamily(&nc.Spec), userdata.Options{
		ClusterName:         c.Name,
		ClusterEndpoint:     c.Endpoint,
		CABundle:            c.CABundle,
		ClusterCIDR:         c.ServiceCIDR,
		ClusterDNS:          c.DNS,
		Kubelet:             nc.Spec.Kubelet,
		InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
		UserData:            nc.Spec.UserData,
	})
	var se *userdata.SizeError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// userDataCacheSize is how many user data documents a UserDataCache keeps;
// when it has that many, it starts over. Inputs longer than
// userDataCacheMaxKey (user data far over EC2's limit, which no launch
// sends) are not kept, so the cache holds a few dozen MB at most.
const (
	userDataCacheSize   = 256
	userDataCacheMaxKey = 64 << 10
)

// generateUserData is userdata.Generate; tests count its calls.
var generateUserData = userdata.Generate

// UserDataCache remembers the user data generated for launch templates,
// base64 as sent (or the error generating it gave), by everything it was
// generated from, so that launches with the same node class, NodePool labels
// and taints and pod limit do not generate it again, nor does the node
// class's check. Generating costs in proportion to spec.userData and more:
// for Bottlerocket it parses and writes the user's TOML (about a
// millisecond for 12 KB), for AL2023 it renders the NodeConfig. Looking it
// up costs a pass over the inputs. It is safe for concurrent use.
type UserDataCache struct {
	mu      sync.Mutex
	entries map[string]generated
}

type generated struct {
	encoded string
	err     error
}

// NewUserDataCache returns an empty UserDataCache.
func NewUserDataCache() *UserDataCache {
	return &UserDataCache{entries: map[string]generated{}}
}

// generate returns the base64-encoded user data for the family and options.
// A nil cache generates it every time.
func (c *UserDataCache) generate(family awsv1.AMIFamily, opts userdata.Options) (string, error) {
	if c == nil {
		g := generateEncoded(family, opts)
		return g.encoded, g.err
	}
	// The key is the options as JSON, then the user data as it is (JSON
	// would escape it, a second pass over it).
	rest := opts
	rest.UserData = nil
	k, err := json.Marshal(struct {
		Family  awsv1.AMIFamily
		Options userdata.Options
	}{family, rest})
	if err != nil {
		// Options hold only plain values; this cannot fail.
		return "", fmt.Errorf("user data cache key: %w", err)
	}
	if opts.UserData != nil {
		k = append(append(k, 0), *opts.UserData...)
	}
	if len(k) > userDataCacheMaxKey {
		g := generateEncoded(family, opts)
		return g.encoded, g.err
	}
	key := string(k)
	c.mu.Lock()
	g, ok := c.entries[key]
	c.mu.Unlock()
	if !ok {
		g = generateEncoded(family, opts)
		c.mu.Lock()
		if len(c.entries) >= userDataCacheSize {
			clear(c.entries)
		}
		c.entries[key] = g
		c.mu.Unlock()
	}
	return g.encoded, g.err
}

func generateEncoded(family awsv1.AMIFamily, opts userdata.Options) generated {
	ud, err := generateUserData(family, opts)
	if err != nil {
		return generated{err: err}
	}
	return generated{encoded: base64.StdEncoding.EncodeToString([]byte(ud))}
}
