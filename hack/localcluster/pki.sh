# shellcheck shell=bash
# pki.sh: a throwaway PKI and the kubeconfigs, regenerated on every fresh cluster-up (sourced by up.sh).
# ECDSA P-256 keys: generating a dozen of them takes well under a second, RSA would take several.

# cert NAME CN O SANS: a key + certificate signed by the cluster CA. O may be empty; SANS empty => client-only cert.
cert() {
	local name=$1 cn=$2 o=$3 san=$4 subj ext
	subj="/CN=$cn"
	[ -n "$o" ] && subj="/O=$o/CN=$cn"
	ext=$(mktemp)
	if [ -n "$san" ]; then
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=critical,CA:FALSE\n' "$san" >"$ext"
	else
		printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=critical,CA:FALSE\n' >"$ext"
	fi
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$name.key" -out "$name.csr" \
		-subj "$subj" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 3650 \
		-extfile "$ext" 2>/dev/null
	rm -f "$name.csr" "$ext"
}

gen_pki() {
	local d="$S/pki" node ip
	mkdir -p "$d"
	(
		cd "$d"
		umask 077
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
			-days 3650 -subj "/CN=meshbench-localcluster-ca" 2>/dev/null
		# Service-account signing key (ES256).
		openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
		openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
		cert apiserver kube-apiserver "" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$KUBERNETES_SVC_IP,IP:$NODE1_IP"
		cert admin admin system:masters ""
		cert controller-manager system:kube-controller-manager "" ""
		cert scheduler system:kube-scheduler "" ""
		cert kube-proxy system:kube-proxy "" ""
		# apiserver -> kubelet (exec, logs, port-forward); Prometheus reuses it to scrape the kubelets (webhook authz
		# lets system:masters read /metrics/*).
		cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters ""
		for node in "$NODE1" "$NODE2"; do
			ip=$(node_ip "$node")
			cert "kubelet-$node" "system:node:$node" system:nodes ""
			cert "kubelet-serving-$node" "$node" "" "DNS:$node,IP:$ip"
		done
		chmod 0644 ./*.crt
	)
}

# kubeconfig NAME USER CERTBASE: a cert-auth kubeconfig pointing at the apiserver on node1's address.
kubeconfig() {
	cat >"$S/kubeconfig/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: meshbench-local
  cluster:
    certificate-authority: $S/pki/ca.crt
    server: $APISERVER_URL
users:
- name: $2
  user:
    client-certificate: $S/pki/$3.crt
    client-key: $S/pki/$3.key
contexts:
- name: meshbench-local
  context: {cluster: meshbench-local, user: $2}
current-context: meshbench-local
EOF
}

gen_kubeconfigs() {
	mkdir -p "$S/kubeconfig"
	kubeconfig admin admin admin
	kubeconfig controller-manager system:kube-controller-manager controller-manager
	kubeconfig scheduler system:kube-scheduler scheduler
	kubeconfig kube-proxy system:kube-proxy kube-proxy
	kubeconfig "kubelet-$NODE1" "system:node:$NODE1" "kubelet-$NODE1"
	kubeconfig "kubelet-$NODE2" "system:node:$NODE2" "kubelet-$NODE2"
}
