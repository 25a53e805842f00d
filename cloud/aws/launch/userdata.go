package launch

import (
	"errors"
	"strings"

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
// Bottlerocket, say), which a launch reports.
func CheckUserData(nc *awsv1.EC2NodeClass, c Cluster) *userdata.SizeError {
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
	_, err := userdata.Generate(amifamily.ResolvedFamily(&nc.Spec), userdata.Options{
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
