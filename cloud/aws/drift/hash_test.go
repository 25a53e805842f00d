package drift

import (
	"encoding/json"
	"sync"
	"testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// TestHashFixtures pins the hash of node class specs, written in JSON, to
// the values Karpenter's AWS provider v1.14.1 returns from
// EC2NodeClass.Hash for the same JSON and CA bundle (hash version v5).
// Equal values in the table are specs that must hash alike; any change to
// the algorithm, the hashed type or field names, the family resolution or
// the decoding of the spec shows up here.
func TestHashFixtures(t *testing.T) {
	if HashVersion != "v5" {
		t.Fatalf("HashVersion = %q; the fixtures below are hash version v5", HashVersion)
	}
	for _, tc := range []struct {
		name     string
		caBundle string
		spec     string
		want     string
	}{
		{"alias only", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}]}`, "18231103970095279452"},
		{"alias, other version", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@v20240807"}],"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}]}`, "18231103970095279452"},
		{"selectors do not count", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"subnetSelectorTerms":[{"id":"subnet-1"}],"securityGroupSelectorTerms":[{"name":"sg"}],"capacityReservationSelectorTerms":[{"id":"cr-1"}],"ipPrefixCount":2}`, "18231103970095279452"},
		{"explicit family equal to the alias", "", `{"role":"KarpenterNodeRole-c","amiFamily":"AL2023","amiSelectorTerms":[{"alias":"al2023@latest"}],"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}]}`, "18231103970095279452"},
		{"bottlerocket alias", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"bottlerocket@latest"}]}`, "13641588648406995120"},
		{"custom family by id", "", `{"role":"KarpenterNodeRole-c","amiFamily":"Custom","amiSelectorTerms":[{"id":"ami-123"}]}`, "13487429663942732381"},
		{"explicit AL2 family with ids", "", `{"role":"KarpenterNodeRole-c","amiFamily":"AL2","amiSelectorTerms":[{"id":"ami-123"}]}`, "10014884713118176905"},
		{"CA bundle", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}]}`, "2830138495809950903"},
		{"other role", "", `{"role":"other","amiSelectorTerms":[{"alias":"al2023@latest"}]}`, "15272473361528552689"},
		{"instance profile", "", `{"instanceProfile":"profile-a","amiSelectorTerms":[{"alias":"al2023@latest"}]}`, "7415710030320767028"},
		{"default metadata options", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"metadataOptions":{"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}}`, "12559674013333286569"},
		{"hop limit 2", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"metadataOptions":{"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":2,"httpTokens":"required"}}`, "8658623079816709442"},
		{"tags", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"tags":{"team":"a","env":"prod"}}`, "12876152449221237738"},
		{"tags written in the other order", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"tags":{"env":"prod","team":"a"}}`, "12876152449221237738"},
		{"empty tags", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"tags":{}}`, "1802994045264930481"},
		{"user data", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"userData":"#!/bin/bash\necho hello\n"}`, "14334301841947124027"},
		{"empty kubelet", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"kubelet":{}}`, "7438990664188322665"},
		{"kubelet", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"kubelet":{"clusterDNS":["10.0.0.10","10.0.0.11"],"maxPods":110,"podsPerCore":10,"systemReserved":{"cpu":"100m","memory":"100Mi"},"kubeReserved":{"cpu":"200m"},"evictionHard":{"memory.available":"5%"},"evictionSoft":{"memory.available":"10%"},"evictionSoftGracePeriod":{"memory.available":"1m30s"},"evictionMaxPodGracePeriod":60,"imageGCHighThresholdPercent":85,"imageGCLowThresholdPercent":80,"cpuCFSQuota":false}}`, "11195930694751605744"},
		{"kubelet, clusterDNS in the other order", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"kubelet":{"clusterDNS":["10.0.0.11","10.0.0.10"],"maxPods":110,"podsPerCore":10,"systemReserved":{"cpu":"100m","memory":"100Mi"},"kubeReserved":{"cpu":"200m"},"evictionHard":{"memory.available":"5%"},"evictionSoft":{"memory.available":"10%"},"evictionSoftGracePeriod":{"memory.available":"1m30s"},"evictionMaxPodGracePeriod":60,"imageGCHighThresholdPercent":85,"imageGCLowThresholdPercent":80,"cpuCFSQuota":false}}`, "11195930694751605744"},
		{"kubelet maxPods only", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"kubelet":{"maxPods":110}}`, "2119847173878047180"},
		{"kubelet cpuCFSQuota true", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"kubelet":{"cpuCFSQuota":true}}`, "16883850803853094792"},
		{"kubelet evictionSoftGracePeriod 90s", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"kubelet":{"evictionSoftGracePeriod":{"memory.available":"90s"}}}`, "3730004044191056764"},
		{"block device", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeType":"gp3","encrypted":true,"deleteOnTermination":true,"iops":3000,"throughput":125,"kmsKeyID":"arn:aws:kms:eu-central-1:111122223333:key/k","snapshotID":"snap-1","volumeInitializationRate":100},"rootVolume":true}]}`, "2913995350905757246"},
		{"block device size in bytes", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"21474836480","volumeType":"gp3"}}]}`, "10425395597802538528"},
		{"block device size 20Gi", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi","volumeType":"gp3"}}]}`, "13564886015499502893"},
		{"block device size 20480Mi", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20480Mi","volumeType":"gp3"}}]}`, "13564886015499502893"},
		{"two block devices", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi"}},{"deviceName":"/dev/xvdb","ebs":{"volumeSize":"100Gi"}}]}`, "15876695517137420164"},
		{"two block devices in the other order", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"blockDeviceMappings":[{"deviceName":"/dev/xvdb","ebs":{"volumeSize":"100Gi"}},{"deviceName":"/dev/xvda","ebs":{"volumeSize":"20Gi"}}]}`, "15876695517137420164"},
		{"instance store policy", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"instanceStorePolicy":"RAID0"}`, "3408949729618376736"},
		{"detailed monitoring", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"detailedMonitoring":true}`, "9067955936263611156"},
		{"detailed monitoring false", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"detailedMonitoring":false}`, "12169188254450288955"},
		{"public IP", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"associatePublicIPAddress":true}`, "11064928827601648745"},
		{"context", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"context":"ctx-1"}`, "5922458559259127804"},
		{"network interfaces", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"networkInterfaces":[{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"interface"},{"networkCardIndex":1,"deviceIndex":1,"interfaceType":"efa-only"}]}`, "4656084904651197684"},
		{"network interfaces in the other order", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"networkInterfaces":[{"networkCardIndex":1,"deviceIndex":1,"interfaceType":"efa-only"},{"networkCardIndex":0,"deviceIndex":0,"interfaceType":"interface"}]}`, "4656084904651197684"},
		{"placement group by name", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"placementGroupSelector":{"name":"pg-a"}}`, "1180084669061857352"},
		{"placement group by id", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"placementGroupSelector":{"id":"pg-0123"}}`, "8172398875060734683"},
		{"connection tracking", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"connectionTracking":{"tcpEstablishedTimeout":600,"udpStreamTimeout":120,"udpTimeout":30}}`, "5015166221920197225"},
		{"cpu options", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"cpuOptions":{"nestedVirtualization":"enabled"}}`, "12770908450172326910"},
		{"everything", "Q0E=", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"userData":"x","tags":{"team":"a"},"kubelet":{"maxPods":58},"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"50Gi","volumeType":"gp3","encrypted":true}}],"metadataOptions":{"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"},"detailedMonitoring":true,"associatePublicIPAddress":false,"context":"c"}`, "3803306357084419505"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{}
			if err := json.Unmarshal([]byte(`{"spec":`+tc.spec+`}`), nc); err != nil {
				t.Fatal(err)
			}
			if got := Hash(nc, tc.caBundle); got != tc.want {
				t.Errorf("Hash(%s, %q) = %s, want %s", tc.spec, tc.caBundle, got, tc.want)
			}
		})
	}
}

// TestHashConcurrent hashes node classes from several goroutines at once, as
// the node class status controller and launches do, and wants each hash to
// be the value Karpenter's AWS provider computes (the same as in
// TestHashFixtures) however the calls overlap. A hash that depends on what
// else is being hashed at the moment stamps a NodeClaim with a value its
// node class never had, and drifts it.
func TestHashConcurrent(t *testing.T) {
	classes := []struct {
		name     string
		caBundle string
		spec     string
		want     string
	}{
		{"alias only", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}]}`, "18231103970095279452"},
		{"CA bundle", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}]}`, "2830138495809950903"},
		{"tags", "", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"tags":{"team":"a","env":"prod"}}`, "12876152449221237738"},
		{"everything", "Q0E=", `{"role":"KarpenterNodeRole-c","amiSelectorTerms":[{"alias":"al2023@latest"}],"subnetSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"securityGroupSelectorTerms":[{"tags":{"karpenter.sh/discovery":"c"}}],"userData":"x","tags":{"team":"a"},"kubelet":{"maxPods":58},"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"50Gi","volumeType":"gp3","encrypted":true}}],"metadataOptions":{"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"},"detailedMonitoring":true,"associatePublicIPAddress":false,"context":"c"}`, "3803306357084419505"},
	}
	ncs := make([]*awsv1.EC2NodeClass, len(classes))
	for i, c := range classes {
		ncs[i] = &awsv1.EC2NodeClass{}
		if err := json.Unmarshal([]byte(`{"spec":`+c.spec+`}`), ncs[i]); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines, rounds = 8, 2000
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		wrong = make([]int, len(classes))
	)
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for r := range rounds {
				i := (g + r) % len(classes)
				if Hash(ncs[i], classes[i].caBundle) != classes[i].want {
					mu.Lock()
					wrong[i]++
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, c := range classes {
		if wrong[i] > 0 {
			t.Errorf("%s: %d of %d hashes computed alongside others differ from %s", c.name, wrong[i], goroutines*rounds/len(classes), c.want)
		}
	}
}
