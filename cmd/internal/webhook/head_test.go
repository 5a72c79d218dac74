package webhook

import (
	"encoding/json"
	"reflect"
	"testing"
)

// headInputs are reviews as kube-apiserver sends them and variants that
// encoding/json reads in ways a scanner could miss.
var headInputs = []string{
	podReview,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","namespace":"team"}}`,
	`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"namespace":"team","uid":"u","object":{"a":[1,2.5e3,true,null,"x"]}}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
	` { "apiVersion" : "admission.k8s.io/v1" , "request" : { "uid" : "u" } } `,
	// Case variants and repeats: encoding/json matches keys regardless
	// of case and keeps the last.
	`{"apiVersion":"admission.k8s.io/v1","APIVERSION":"v1beta1","kind":"AdmissionReview","request":{"uid":"u","namespace":"team"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","namespace":"a","Namespace":"b"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","namespace":"a","namespace":"b"}}`,
	`{"kind":"AdmissionReview","kind":"Other","request":{"uid":"u","namespace":"a"}}`,
	`{"request":{"uid":"u","namespace":"a"},"request":null}`,
	// Values that are not plain strings, and documents that are not
	// reviews or not JSON.
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"\u0075","namespace":"team"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7,"namespace":"team"}}`,
	`{"apiVersion":null,"kind":"AdmissionReview","request":{"uid":"u","namespace":"team"}}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":"x"}`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","namespace":"team"}} trailing`,
	`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","namespace":"team","object":{"a":01}}}`,
	`[]`,
	``,
}

// podReview is a review of a pod create, as kube-apiserver v1.36 sends
// it (its object shortened to what the API server keeps of a benchmark
// pod).
const podReview = `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"0b7a0a43-6a4e-4f0e-9f4c-1b3e1f6f1a11",` +
	`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
	`"requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},` +
	`"name":"p-1","namespace":"bench-ledger-1","operation":"CREATE","userInfo":{"username":"system:apiserver","uid":"3c0f","groups":["system:authenticated","system:masters"]},` +
	`"object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p-1","namespace":"bench-ledger-1","uid":"5795fa61-dc9e-4338-bf40-d41dac03874d",` +
	`"creationTimestamp":"2026-11-28T10:00:00Z","managedFields":[{"manager":"install.test","operation":"Update","apiVersion":"v1","time":"2026-11-28T10:00:00Z",` +
	`"fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},` +
	`"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},` +
	`"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}]},` +
	`"spec":{"volumes":[{"name":"kube-api-access-x","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}}],"defaultMode":420}}],` +
	`"containers":[{"name":"c","image":"registry.example/app:1","resources":{"requests":{"cpu":"100m"}},"volumeMounts":[{"name":"kube-api-access-x","readOnly":true,` +
	`"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",` +
	`"imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default",` +
	`"serviceAccount":"default","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists",` +
	`"effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},` +
	`"status":{"phase":"Pending","qosClass":"Burstable"}},"oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}}`

// checkHead compares readHead with encoding/json on data, and reports
// whether the scanner read it.
func checkHead(t *testing.T, data []byte) bool {
	t.Helper()
	var want reviewHead
	wantErr := json.Unmarshal(data, &want)
	got, err := readHead(data)
	if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("readHead and encoding/json differ on\n%s\n got error %v\nwant error %v", data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("readHead and encoding/json differ on\n%s\n got %+v %+v\nwant %+v %+v", data, got, got.Request, want, want.Request)
	}
	_, scanned := scanHead(data)
	return scanned
}

func TestReadHeadReadsWhatEncodingJSONReads(t *testing.T) {
	scanned := 0
	for _, in := range headInputs {
		if checkHead(t, []byte(in)) {
			scanned++
		}
	}
	if _, ok := scanHead([]byte(podReview)); !ok || scanned < 5 {
		t.Fatalf("the scanner read %d of the inputs (a pod's review: %v); the check is too weak", scanned, ok)
	}
}

func FuzzReadHead(f *testing.F) {
	for _, in := range headInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkHead(t, data)
	})
}

// BenchmarkReadHead reads the head of a pod's review, as the webhook does
// for every review it relays;
// encoding-json is what it takes encoding/json.
func BenchmarkReadHead(b *testing.B) {
	body := []byte(podReview)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := readHead(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var head reviewHead
			if err := json.Unmarshal(body, &head); err != nil {
				b.Fatal(err)
			}
		}
	})
}
