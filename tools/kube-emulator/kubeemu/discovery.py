"""API discovery: the group and resource lists and the OpenAPI documents kubectl reads."""


from .common import ApiError
from .resources import GROUPS, RESOURCES


class Discovery:
    """Mixed into the HTTP handler (server.py)."""

    def openapi_v2(self):
        """An OpenAPI v2 document without paths or definitions. kubectl 1.27 and 1.28 must download
        one before `apply` (they ask for the protobuf form); finding no schema for a kind, kubectl
        skips client-side validation and computes patches from its built-in types."""
        accept = self.headers.get("Accept") or ""
        if "protobuf" in accept:
            def field(num, payload):  # a length-delimited protobuf field
                return bytes([num << 3 | 2, len(payload)]) + payload
            # openapi_v2.Document{swagger: "2.0" (1), info (2): Info{title (1), version (2)}}
            info = field(1, b"Kubernetes") + field(2, f"v{self.api.opts.server_version}".encode())
            data = field(1, b"2.0") + field(2, info)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")  # Go cannot parse the "@v1.0" media type
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self._code = 200
            return
        self.send_json(200, {"swagger": "2.0", "info": {"title": "Kubernetes",
                                                        "version": f"v{self.api.opts.server_version}"},
                             "paths": {}, "definitions": {}})

    def openapi_v3(self, gv_path):
        """Just enough OpenAPI v3 for kubectl: each group-version lists its paths, and the PATCH
        operations declare the `fieldValidation` query parameter, so kubectl leaves validation to
        the server (it would otherwise need the full schemas). No schemas are served: kubectl then
        computes apply patches from its built-in types (JSON merge patch for the CRDs)."""
        gvs = [("", "v1")] + [(g, v) for g, vs in GROUPS for v in vs]
        name_of = lambda g, v: f"apis/{g}/{v}" if g else "api/v1"
        if not gv_path:
            return self.send_json(200, {"paths": {name_of(g, v): {"serverRelativeURL": f"/openapi/v3/{name_of(g, v)}?hash=0"}
                                                  for g, v in gvs}})
        gv = next(((g, v) for g, v in gvs if name_of(g, v) == gv_path), None)
        if gv is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                  for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
        paths = {}
        for r in RESOURCES:
            if (r.group, r.version) != gv or r.plural == "bindings":
                continue
            base = f"/{name_of(*gv)}/" + ("namespaces/{namespace}/" if r.namespaced else "") + r.plural
            gvk = {"group": r.group, "version": r.version, "kind": r.kind}
            paths[base + "/{name}"] = {
                "get": {"operationId": f"read{r.kind}", "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk},
                "patch": {"operationId": f"patch{r.kind}", "x-kubernetes-action": "patch",
                          "x-kubernetes-group-version-kind": gvk, "parameters": params},
            }
            paths[base] = {"post": {"operationId": f"create{r.kind}", "x-kubernetes-action": "post",
                                    "x-kubernetes-group-version-kind": gvk, "parameters": params}}
        return self.send_json(200, {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.30.0"},
                                    "paths": paths, "components": {"schemas": {}}})

    def group_doc(self, group, versions):
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def resource_list(self, group, version):
        rs = [r for r in RESOURCES if r.group == group and r.version == version
              and r.qualified not in self.api.opts.without_crd]
        if not rs:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        out = []
        for r in rs:
            e = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": r.verbs}
            if r.short:
                e["shortNames"] = r.short
            if r.categories:
                e["categories"] = r.categories
            out.append(e)
            for s in r.subresources:
                if s == "binding":
                    out.append({"name": f"{r.plural}/binding", "singularName": "", "namespaced": True,
                                "kind": "Binding", "verbs": ["create"]})
                elif s == "eviction":
                    out.append({"name": f"{r.plural}/eviction", "singularName": "", "namespaced": True,
                                "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
                else:
                    out.append({"name": f"{r.plural}/{s}", "singularName": "", "namespaced": r.namespaced,
                                "kind": r.kind, "verbs": ["get", "patch", "update"]})
        gv = f"{group}/{version}" if group else version
        return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                                    "resources": out})
