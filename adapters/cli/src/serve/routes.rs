//! Which endpoints may serve the model a client asks for: a `[[route]]` of that name,
//! else the endpoints configured with that `model`, else the endpoints with no `model`
//! of their own (they pass the client's model through).

use std::collections::BTreeMap;

use steadfast_http::{EndpointId, EndpointSet};

use super::config::RouteEntry;

/// One endpoint as routing sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routable<'a> {
    /// Its name (as routes name it).
    pub name: &'a str,
    /// The model it forces into requests, if any.
    pub model: Option<&'a str>,
}

/// The model names and where each may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes {
    by_model: BTreeMap<String, EndpointSet>,
    passthrough: Option<EndpointSet>,
}

impl Routes {
    /// The routing of `endpoints` (in engine order) with `routes`. An error names the
    /// route (1-based) and what is wrong with it.
    pub fn new(endpoints: &[Routable<'_>], routes: &[RouteEntry]) -> Result<Routes, String> {
        if endpoints.len() > EndpointSet::CAPACITY {
            return Err(format!(
                "at most {} endpoints can be routed",
                EndpointSet::CAPACITY
            ));
        }
        let id = |i: usize| EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
        let mut by_model = BTreeMap::new();
        for (n, route) in routes.iter().enumerate() {
            let mut ids = Vec::with_capacity(route.endpoints.len());
            for name in &route.endpoints {
                let found = endpoints.iter().position(|e| e.name == name.as_str());
                let Some(i) = found else {
                    let names: Vec<&str> = endpoints.iter().map(|e| e.name).collect();
                    return Err(format!(
                        "route {}: endpoint `{name}` is not configured (endpoints: {})",
                        n + 1,
                        names.join(", ")
                    ));
                };
                ids.push(id(i));
            }
            let set = EndpointSet::of(ids).ok_or_else(|| format!("route {}: empty", n + 1))?;
            if by_model.insert(route.model.clone(), set).is_some() {
                return Err(format!(
                    "route {}: model `{}` is routed twice",
                    n + 1,
                    route.model
                ));
            }
        }
        let mut implied: BTreeMap<String, Vec<EndpointId>> = BTreeMap::new();
        let mut passthrough = Vec::new();
        for (i, e) in endpoints.iter().enumerate() {
            match e.model {
                Some(m) => implied.entry(m.to_owned()).or_default().push(id(i)),
                None => passthrough.push(id(i)),
            }
        }
        for (model, ids) in implied {
            if let (false, Some(set)) = (by_model.contains_key(&model), EndpointSet::of(ids)) {
                by_model.insert(model, set);
            }
        }
        Ok(Routes {
            by_model,
            passthrough: EndpointSet::of(passthrough),
        })
    }

    /// Where a request for `model` may go; `None`: no endpoint serves it.
    pub fn resolve(&self, model: &str) -> Option<EndpointSet> {
        self.by_model.get(model).copied().or(self.passthrough)
    }

    /// The model names clients may ask for (routes and endpoints' models), sorted.
    pub fn models(&self) -> impl Iterator<Item = &str> {
        self.by_model.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e<'a>(name: &'a str, model: Option<&'a str>) -> Routable<'a> {
        Routable { name, model }
    }

    fn route(model: &str, endpoints: &[&str]) -> RouteEntry {
        RouteEntry {
            model: model.into(),
            endpoints: endpoints.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn routes_then_endpoint_models_then_passthrough() {
        let endpoints = [
            e("oa", Some("gpt")),
            e("cl", Some("claude")),
            e("any", None),
        ];
        let r = Routes::new(&endpoints, &[route("gpt", &["oa", "cl"])]).unwrap();
        let gpt = r.resolve("gpt").unwrap();
        assert!(gpt.contains(EndpointId(0)) && gpt.contains(EndpointId(1)));
        assert!(!gpt.contains(EndpointId(2)));
        let claude = r.resolve("claude").unwrap();
        assert!(claude.contains(EndpointId(1)) && !claude.contains(EndpointId(0)));
        let other = r.resolve("llama").unwrap();
        assert!(other.contains(EndpointId(2)) && !other.contains(EndpointId(0)));
        assert_eq!(r.models().collect::<Vec<_>>(), ["claude", "gpt"]);
    }

    #[test]
    fn without_a_passthrough_endpoint_an_unknown_model_has_nowhere_to_go() {
        let r = Routes::new(&[e("oa", Some("gpt"))], &[]).unwrap();
        assert_eq!(r.resolve("claude"), None);
        assert!(r.resolve("gpt").is_some());
    }

    #[test]
    fn a_route_naming_an_unknown_endpoint_or_a_model_twice_is_refused() {
        let endpoints = [e("oa", Some("gpt"))];
        let err = Routes::new(&endpoints, &[route("x", &["nope"])]).unwrap_err();
        assert!(
            err.contains("route 1: endpoint `nope`") && err.contains("oa"),
            "{err}"
        );
        let twice = [route("x", &["oa"]), route("x", &["oa"])];
        let err = Routes::new(&endpoints, &twice).unwrap_err();
        assert!(err.starts_with("route 2: model `x`"), "{err}");
    }
}
