package userdata

import (
	"fmt"
	"strings"
)

func windows(opts Options) (string, error) {
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if opts.UserData != nil && strings.TrimSpace(*opts.UserData) != "" {
		user := strings.TrimSpace(*opts.UserData)
		user = strings.TrimSuffix(strings.TrimPrefix(user, "<powershell>"), "</powershell>")
		b.WriteString(strings.TrimSpace(user) + "\n")
	}
	b.WriteString("[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s' -Base64ClusterCA '%s'", opts.ClusterName, opts.ClusterEndpoint, opts.CABundle)
	if args := kubeletExtraArgs(opts); len(args) > 0 {
		fmt.Fprintf(&b, " -KubeletExtraArgs '%s'", strings.Join(args, " "))
	}
	if dns := clusterDNS(opts); len(dns) > 0 {
		fmt.Fprintf(&b, " -DNSClusterIP '%s'", dns[0])
	}
	b.WriteString("\n</powershell>\n")
	return b.String(), nil
}
