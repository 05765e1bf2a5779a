#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_scenarios_load() {
        let all = Scenario::embedded();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].name, "seed000-50rps");
        assert_eq!(all[0].request_count(), 150);
        assert_eq!(all[1].name, "seed000-100rps");
        assert_eq!(all[1].request_count(), 300);
        assert_eq!(
            all[0].fault_span(),
            Some((Duration::from_millis(500), Duration::from_millis(1500)))
        );
    }

    #[test]
    fn shipped_scenario_files_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 6, "found {n} scenario files");
    }

    fn base() -> String {
        EMBEDDED[0].1.to_string()
    }

    fn error_of(text: &str) -> ScenarioError {
        Scenario::parse("x.toml", text).unwrap_err()
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let text = base().replace("workers = 8", "workers = 8\nwrokers = 3");
        let line = text.lines().position(|l| l.starts_with("wrokers")).unwrap() + 1;
        let e = error_of(&text);
        assert_eq!(e.file, "x.toml");
        assert_eq!(e.line, Some(line));
        assert_eq!(e.key.as_deref(), Some("wrokers"));
        assert!(e
            .to_string()
            .starts_with(&format!("x.toml:{line}: key `wrokers`")));
    }

    #[test]
    fn missing_key_is_named() {
        let text: String = base()
            .lines()
            .filter(|l| !l.starts_with("rate"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some("rate"), "{e}");
    }

    #[test]
    fn bad_values_are_named_with_line() {
        let cases = [
            ("rate = 50.0", "rate = -1.0", "rate"),
            ("workers = 8", "workers = 0", "workers"),
            ("duration = \"3s\"", "duration = \"3 parsecs\"", "duration"),
            (
                "outcome = \"error\"",
                "outcome = \"boom\"",
                "downstream.faults.outcome",
            ),
            (
                "outcome = \"error\"",
                "outcome = \"hang\"",
                "client.timeout",
            ),
            (
                "until = \"1500ms\"",
                "until = \"100ms\"",
                "downstream.faults.until",
            ),
            ("kind = \"seed\"", "kind = \"nope\"", "strategy.kind"),
            ("failures = 5", "failures = 0", "strategy.failures"),
            ("window = \"500ms\"", "window = \"0s\"", "window"),
            ("rate = 50.0", "rate = \"fast\"", "rate"),
        ];
        for (from, to, key) in cases {
            let text = base().replacen(from, to, 1);
            assert_ne!(text, base(), "{from}");
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(to))
                .unwrap()
                + 1;
            let e = error_of(&text);
            assert_eq!(e.key.as_deref(), Some(key), "{to}: {e}");
            assert_eq!(e.line, Some(line), "{to}: {e}");
        }
    }

    #[test]
    fn fusebox_keys_are_checked_per_policy() {
        let cases = [
            (
                "policy = \"consecutive\"",
                "policy = \"sometimes\"",
                "strategy.policy",
            ),
            (
                "policy = \"consecutive\"",
                "policy = \"rate-count\"",
                "strategy.window_calls",
            ),
            ("probes = 1", "probes = 0", "strategy.probes"),
            (
                "probes = 1",
                "probes = 1\nwindow_time = \"1s\"",
                "strategy.window_time",
            ),
        ];
        for (from, to, key) in cases {
            let text = base().replacen(from, to, 1);
            assert_ne!(text, base(), "{from}");
            let e = error_of(&text);
            assert_eq!(e.key.as_deref(), Some(key), "{to}: {e}");
            assert!(e.line.is_some(), "{e}");
        }
        let rate = base().replacen(
            "policy = \"consecutive\"\nfailures = 5",
            "policy = \"rate-count\"\nrate = 1.5\nwindow_calls = 10",
            1,
        );
        assert_eq!(error_of(&rate).key.as_deref(), Some("strategy.rate"));
        let ok = base().replacen(
            "policy = \"consecutive\"\nfailures = 5",
            "policy = \"rate-time\"\nrate = 0.5\nwindow_time = \"1s\"\nmin_calls = 5",
            1,
        );
        let s = Scenario::parse("x", &ok).unwrap();
        assert_eq!(s.strategies[2].kind.as_str(), "fusebox");
        // fusebox's own validation: min_calls above the count window.
        let bad = base().replacen(
            "policy = \"consecutive\"\nfailures = 5",
            "policy = \"rate-count\"\nrate = 0.5\nwindow_calls = 0",
            1,
        );
        assert_eq!(error_of(&bad).key.as_deref(), Some("strategy.window_calls"));
    }

    #[test]
    fn key_of_another_kind_is_rejected() {
        let text = base().replacen("kind = \"none\"", "kind = \"none\"\nfailures = 3", 1);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some("strategy.failures"), "{e}");
        assert!(e.message.contains("none"), "{e}");
    }

    #[test]
    fn arrivals_follow_the_rate() {
        let s = Scenario::parse("x", &base()).unwrap();
        assert_eq!(s.arrival_ns(0), 0);
        assert_eq!(s.arrival_ns(1), 20_000_000);
        assert_eq!(s.arrival_ns(149), 2_980_000_000);
        let odd = base().replace("rate = 50.0", "rate = 30.0");
        let s = Scenario::parse("x", &odd).unwrap();
        // 3 s at 30/s: 0, 1/30, ..., 89/30 < 3.
        assert_eq!(s.request_count(), 90);
    }
}
