package fake

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// Cluster describes an EKS cluster to add with AddCluster.
type Cluster struct {
	Name string
	// Version is the Kubernetes minor version, e.g. "1.33". Default "1.33".
	Version string
	// Endpoint defaults to a generated https://<id>.gr7.<region>.eks.amazonaws.com.
	Endpoint string
	// CertificateAuthority is the base64 CA bundle; a placeholder by default.
	CertificateAuthority string
	// ServiceCIDR defaults to 10.100.0.0/16.
	ServiceCIDR string
	// Status defaults to ACTIVE.
	Status string
	// AuthenticationMode defaults to API_AND_CONFIG_MAP.
	AuthenticationMode string
	SubnetIDs          []string
	SecurityGroupIDs   []string
	// ClusterSecurityGroupID is the security group EKS creates for the cluster.
	ClusterSecurityGroupID string
	VPCID                  string
}

type cluster struct {
	Cluster
	created       time.Time
	accessEntries map[string]bool
	podIdentity   []podIdentityAssociation
}

// podIdentityAssociation is an EKS Pod Identity association: the IAM role a
// service account's pods receive credentials for.
type podIdentityAssociation struct {
	id, namespace, serviceAccount, roleARN string
}

// AddCluster creates an EKS cluster and returns it with defaults filled in.
func (f *AWS) AddCluster(c Cluster) (Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Name == "" {
		return Cluster{}, fmt.Errorf("cluster name is required")
	}
	if _, ok := f.clusters[c.Name]; ok {
		return Cluster{}, fmt.Errorf("cluster %s already exists", c.Name)
	}
	if c.Version == "" {
		c.Version = "1.33"
	}
	if c.Endpoint == "" {
		c.Endpoint = fmt.Sprintf("https://%s.gr7.%s.eks.amazonaws.com", strings.ToUpper(f.hex(32)), f.opts.Region)
	}
	if c.CertificateAuthority == "" {
		c.CertificateAuthority = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nZmFrZSBjbHVzdGVyIENB\n-----END CERTIFICATE-----\n"))
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.100.0.0/16"
	}
	if c.Status == "" {
		c.Status = string(ekstypes.ClusterStatusActive)
	}
	if c.AuthenticationMode == "" {
		c.AuthenticationMode = string(ekstypes.AuthenticationModeApiAndConfigMap)
	}
	if c.VPCID == "" {
		c.VPCID = DefaultVPCID
	}
	c.SubnetIDs = append([]string(nil), c.SubnetIDs...)
	c.SecurityGroupIDs = append([]string(nil), c.SecurityGroupIDs...)
	f.clusters[c.Name] = &cluster{Cluster: c, created: f.now(), accessEntries: map[string]bool{}}
	return c, nil
}

// SetClusterVersion changes a cluster's Kubernetes version (an upgrade).
func (f *AWS) SetClusterVersion(name, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[name]
	if !ok {
		return fmt.Errorf("no cluster %s", name)
	}
	c.Version = version
	return nil
}

// AddAccessEntry authorizes a principal (an IAM role ARN) on a cluster.
func (f *AWS) AddAccessEntry(clusterName, principalARN string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[clusterName]
	if !ok {
		return fmt.Errorf("no cluster %s", clusterName)
	}
	c.accessEntries[principalARN] = true
	return nil
}

// RemoveAccessEntry removes a principal's access entry.
func (f *AWS) RemoveAccessEntry(clusterName, principalARN string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clusters[clusterName]; ok {
		delete(c.accessEntries, principalARN)
	}
}

// AccessEntryAllows reports whether a node whose instance role is roleName
// may register with a cluster of this fake: some cluster has an access entry
// for that role (matched by role name, so a path in the ARN does not matter).
// The simulated kubelet asks it before registering a booted instance.
func (f *AWS) AccessEntryAllows(roleName string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clusters {
		for arn := range c.accessEntries {
			if strings.Contains(arn, ":role/") && profileNameFromARN(arn) == roleName {
				return true
			}
		}
	}
	return false
}

func clusterNotFound(api, name string) error {
	return typed(svcEKS, api, &ekstypes.ResourceNotFoundException{Message: ptr(fmt.Sprintf("No cluster found for name: %s.", name)), ClusterName: ptr(name)})
}

// DescribeCluster implements sdk.EKS.
func (f *AWS) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	const api = "DescribeCluster"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.Name)
	c, ok := f.clusters[name]
	if !ok {
		return nil, clusterNotFound(api, name)
	}
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
		Name:                 ptr(c.Name),
		Arn:                  ptr(fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", f.opts.Region, f.opts.AccountID, c.Name)),
		Version:              ptr(c.Version),
		Endpoint:             ptr(c.Endpoint),
		CertificateAuthority: &ekstypes.Certificate{Data: ptr(c.CertificateAuthority)},
		Status:               ekstypes.ClusterStatus(c.Status),
		CreatedAt:            ptr(c.created),
		PlatformVersion:      ptr("eks.1"),
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{
			ServiceIpv4Cidr: ptr(c.ServiceCIDR), IpFamily: ekstypes.IpFamilyIpv4,
		},
		ResourcesVpcConfig: &ekstypes.VpcConfigResponse{
			VpcId: ptr(c.VPCID), SubnetIds: append([]string(nil), c.SubnetIDs...),
			SecurityGroupIds:       append([]string(nil), c.SecurityGroupIDs...),
			ClusterSecurityGroupId: ptr(c.ClusterSecurityGroupID), EndpointPublicAccess: true,
		},
		AccessConfig: &ekstypes.AccessConfigResponse{AuthenticationMode: ekstypes.AuthenticationMode(c.AuthenticationMode)},
	}}, nil
}

// ListAccessEntries implements sdk.EKS.
func (f *AWS) ListAccessEntries(_ context.Context, in *eks.ListAccessEntriesInput, _ ...func(*eks.Options)) (*eks.ListAccessEntriesOutput, error) {
	const api = "ListAccessEntries"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.ClusterName)
	c, ok := f.clusters[name]
	if !ok {
		return nil, clusterNotFound(api, name)
	}
	entries := make([]string, 0, len(c.accessEntries))
	for arn := range c.accessEntries {
		entries = append(entries, arn)
	}
	sort.Strings(entries)
	page, next, err := paginate(api, entries, in.NextToken, in.MaxResults, pageSpec{def: 100, min: 1, max: 100})
	if err != nil {
		return nil, err
	}
	return &eks.ListAccessEntriesOutput{AccessEntries: page, NextToken: next}, nil
}

// AddPodIdentityAssociation associates a service account of a cluster with
// an IAM role, as `aws eks create-pod-identity-association` does, and
// returns the association's ID.
func (f *AWS) AddPodIdentityAssociation(clusterName, namespace, serviceAccount, roleARN string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[clusterName]
	if !ok {
		return "", fmt.Errorf("no cluster %s", clusterName)
	}
	for _, a := range c.podIdentity {
		if a.namespace == namespace && a.serviceAccount == serviceAccount {
			return "", fmt.Errorf("service account %s/%s already has association %s", namespace, serviceAccount, a.id)
		}
	}
	id := "a-" + f.hex(17)
	c.podIdentity = append(c.podIdentity, podIdentityAssociation{id: id, namespace: namespace, serviceAccount: serviceAccount, roleARN: roleARN})
	return id, nil
}

// ListPodIdentityAssociations implements sdk.EKS. Associations come sorted by
// namespace, service account and ID; Namespace and ServiceAccount filter them.
func (f *AWS) ListPodIdentityAssociations(_ context.Context, in *eks.ListPodIdentityAssociationsInput, _ ...func(*eks.Options)) (*eks.ListPodIdentityAssociationsOutput, error) {
	const api = "ListPodIdentityAssociations"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.ClusterName)
	c, ok := f.clusters[name]
	if !ok {
		return nil, clusterNotFound(api, name)
	}
	matched := make([]podIdentityAssociation, 0, len(c.podIdentity))
	for _, a := range c.podIdentity {
		if (in.Namespace == nil || *in.Namespace == a.namespace) && (in.ServiceAccount == nil || *in.ServiceAccount == a.serviceAccount) {
			matched = append(matched, a)
		}
	}
	sort.Slice(matched, func(i, j int) bool {
		a, b := matched[i], matched[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.serviceAccount != b.serviceAccount {
			return a.serviceAccount < b.serviceAccount
		}
		return a.id < b.id
	})
	page, next, err := paginate(api, matched, in.NextToken, in.MaxResults, pageSpec{def: 100, min: 1, max: 100})
	if err != nil {
		return nil, err
	}
	out := &eks.ListPodIdentityAssociationsOutput{NextToken: next, Associations: make([]ekstypes.PodIdentityAssociationSummary, 0, len(page))}
	for _, a := range page {
		out.Associations = append(out.Associations, ekstypes.PodIdentityAssociationSummary{
			AssociationId:  ptr(a.id),
			AssociationArn: ptr(fmt.Sprintf("arn:aws:eks:%s:%s:podidentityassociation/%s/%s", f.opts.Region, f.opts.AccountID, c.Name, a.id)),
			ClusterName:    ptr(c.Name),
			Namespace:      ptr(a.namespace),
			ServiceAccount: ptr(a.serviceAccount),
		})
	}
	return out, nil
}
