"""deploy/k8s/*.yaml against Kubernetes' own API schemas, and against each other.

Every document of every file is validated in strict mode (a misspelt or unknown
field is an error, as `kubectl apply --validate=strict` would make it) by the
pinned kubernetes-validate, for Kubernetes 1.30 (the first release where the
preStop `sleep` action is on by default) and 1.33. A file without documents, a
kind or apiVersion the schemas do not know, or a schema set the package lacks
fails the test rather than being skipped.

Then what the schemas cannot see, which docs/deploy.md relies on: the Service
selects the pods and targets a port they declare; the HPA scales the
Deployment on a metric that the prometheus-adapter rule exposes; the grace
period leaves time to drain after the preStop sleep and the shutdown delay; and
a liveness restart cannot come before the kubelet's SIGKILL at the end of the
grace period, so it never cuts a drain short.

Usage: build/venv/bin/python tests/deploy/validate_manifests.py [DIR]
(default DIR: deploy/k8s; CTest runs it as deploy_k8s_manifests.) Exit 0 when
everything passes, 1 otherwise, with one line per problem.
"""

import glob
import os
import sys

import kubernetes_validate
import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
VERSIONS = ("1.30", "1.33")


def load(directory):
    """[(file name, document)] of every *.yaml in directory; problems listed."""
    documents, problems = [], []
    files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
    if not files:
        problems.append(f"{directory}: no *.yaml files")
    for path in files:
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            problems.append(f"{name}: not YAML: {e}")
            continue
        if not docs:
            problems.append(f"{name}: no documents")
        for doc in docs:
            if not (isinstance(doc, dict) and isinstance(doc.get("kind"), str)
                    and isinstance(doc.get("apiVersion"), str)
                    and isinstance(doc.get("metadata", {}).get("name"), str)):
                problems.append(f"{name}: a document without apiVersion, kind and metadata.name")
                continue
            documents.append((name, doc))
    return documents, problems


def schema_problems(name, doc):
    what = f"{name}: {doc['kind']}/{doc['metadata']['name']}"
    problems = []
    for version in VERSIONS:
        try:
            used = kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(top level)"
            problems.append(f"{what}: Kubernetes {version}: {path}: {e.message}")
            continue
        except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as e:
            problems.append(f"{what}: Kubernetes {version}: {e.message}")
            continue
        if used != version:  # an older schema set stood in for a missing one
            problems.append(f"{what}: validated against {used}, not {version}")
    return problems


def of_kind(documents, kind):
    return [doc for _, doc in documents if doc["kind"] == kind]


def flag_value(args, flag):
    """The value of `--flag=V` or `--flag V` in a container's args, else None."""
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
    return None


def service_problems(deployment, services):
    pod = deployment["spec"]["template"]
    labels = pod["metadata"].get("labels", {})
    ports = {p.get("name") for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    numbers = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    problems = []
    for svc in services:
        name = svc["metadata"]["name"]
        selector = svc["spec"].get("selector", {})
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            problems.append(f"Service/{name}: selector {selector} does not select the pods ({labels})")
        for port in svc["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            if target not in ports and target not in numbers:
                problems.append(f"Service/{name}: targetPort {target} is no container port")
    return problems


def hpa_problems(deployments, hpas, configmaps):
    exposed = set()
    for cm in configmaps:
        for text in cm.get("data", {}).values():
            config = yaml.safe_load(text)
            for rule in (config or {}).get("rules", []):
                exposed.add(rule.get("name", {}).get("as"))
    names = {d["metadata"]["name"] for d in deployments}
    problems = []
    for hpa in hpas:
        ref = hpa["spec"]["scaleTargetRef"]
        if ref["kind"] != "Deployment" or ref["name"] not in names:
            problems.append(f"HPA/{hpa['metadata']['name']}: scales {ref['kind']}/{ref['name']}, not a Deployment here")
        for metric in hpa["spec"].get("metrics", []):
            if metric["type"] == "Pods" and metric["pods"]["metric"]["name"] not in exposed:
                problems.append(f"HPA/{hpa['metadata']['name']}: no adapter rule exposes "
                                f"{metric['pods']['metric']['name']} (rules expose {sorted(filter(None, exposed))})")
    return problems


def timing_problems(deployment):
    """Shutdown budget: preStop sleep, then SIGTERM, the shutdown delay, the drain."""
    spec = deployment["spec"]["template"]["spec"]
    grace = spec.get("terminationGracePeriodSeconds", 30)
    problems = []
    for c in spec["containers"]:
        where = f"Deployment/{deployment['metadata']['name']} container {c['name']}"
        sleep = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds")
        delay_ms = flag_value(c.get("args", []), "--shutdown-delay-ms")
        live = c.get("livenessProbe")
        if sleep is None or delay_ms is None or live is None:
            problems.append(f"{where}: needs a preStop sleep, --shutdown-delay-ms and a livenessProbe")
            continue
        if grace <= sleep + int(delay_ms) / 1000:
            problems.append(f"{where}: terminationGracePeriodSeconds {grace} leaves no drain time after "
                            f"preStop {sleep} s + shutdown delay {delay_ms} ms")
        # The first failure comes at SIGTERM at the earliest, the restart
        # (failureThreshold - 1) periods later; SIGKILL comes grace - sleep
        # seconds after SIGTERM.
        earliest = (live.get("failureThreshold", 3) - 1) * live.get("periodSeconds", 10)
        if earliest <= grace - sleep:
            problems.append(f"{where}: a liveness restart could come {earliest} s after SIGTERM, before "
                            f"the grace period ends ({grace - sleep} s after it) and cut the drain short")
    return problems


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "deploy", "k8s")
    documents, problems = load(directory)
    for name, doc in documents:
        found = schema_problems(name, doc)
        problems += found
        if not found:
            print(f"ok   {name}: {doc['kind']}/{doc['metadata']['name']} (Kubernetes {', '.join(VERSIONS)}, strict)")
    if not problems:
        deployments = of_kind(documents, "Deployment")
        if len(deployments) != 1:
            problems.append(f"expected one Deployment, found {len(deployments)}")
        else:
            problems += service_problems(deployments[0], of_kind(documents, "Service"))
            problems += timing_problems(deployments[0])
        problems += hpa_problems(deployments, of_kind(documents, "HorizontalPodAutoscaler"),
                                 of_kind(documents, "ConfigMap"))
    for p in problems:
        print(f"FAIL {p}")
    print(f"kubernetes-validate {kubernetes_validate.__version__}: "
          f"{len(documents)} documents, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
