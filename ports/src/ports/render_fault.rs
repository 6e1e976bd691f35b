//! Why a render failed, in words that never quote the template's data: what a failed
//! report's metadata shows (`renderError`), beside the fixed `error_code` the events carry.
use super::RenderError;
use serde::{Deserialize, Serialize};

/// The cause of an evaluation error an engine classified (see [`RenderError::Fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationCause {
    /// An integer division or remainder by zero, or a division by zero in `calc`.
    DivisionByZero,
    /// A filter could not apply to its input or argument (a date that does not parse, a
    /// value that is not a number, …).
    FilterFailed,
    /// A `calc` expression is not arithmetic the tag can evaluate.
    CalcFailed,
    /// An aggregation tag (`sum_by`, `count_by`, …) was given something that is not rows,
    /// or its total overflowed.
    AggregationFailed,
    /// A field or an index was read from a value that has none.
    InvalidAccess,
    /// A name that is not a function was called, or a function with the wrong arguments.
    InvalidCall,
    /// Any other evaluation error.
    EvaluationFailed,
}

/// An evaluation error with its cause and, when the engine knows it, the template line of
/// the tag or `{{ }}` being evaluated (for a multi-line tag, the line it starts on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvaluationFault {
    /// The cause.
    pub cause: EvaluationCause,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// The engine's own words. They may quote the data: logs only.
    pub detail: String,
}

impl EvaluationFault {
    /// A fault not placed yet (the engine adds the line as the error leaves the tag).
    pub fn new(cause: EvaluationCause, detail: impl Into<String>) -> Self {
        Self {
            cause,
            line: None,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for EvaluationFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{} (line {line})", self.detail),
            None => f.write_str(&self.detail),
        }
    }
}

/// The cause of a failed render as an API shows it: a stable code and a fixed sentence,
/// neither ever holding a data value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderCause {
    /// See [`EvaluationCause::DivisionByZero`].
    DivisionByZero,
    /// See [`EvaluationCause::FilterFailed`].
    FilterFailed,
    /// See [`EvaluationCause::CalcFailed`].
    CalcFailed,
    /// See [`EvaluationCause::AggregationFailed`].
    AggregationFailed,
    /// See [`EvaluationCause::InvalidAccess`].
    InvalidAccess,
    /// See [`EvaluationCause::InvalidCall`].
    InvalidCall,
    /// An evaluation error of no finer cause.
    EvaluationFailed,
    /// The template does not parse.
    TemplateSyntax,
    /// The instruction budget ran out.
    InstructionBudgetExceeded,
    /// Calls nested past the recursion limit.
    RecursionLimit,
    /// The output grew past its limit.
    OutputTooLarge,
    /// The values the template created grew past the memory limit.
    MemoryLimit,
    /// Blocks or expressions nested past the limit.
    NestingTooDeep,
    /// The render took longer than its time bound.
    Timeout,
    /// The process running the template died.
    EngineCrashed,
    /// The rendered output holds markup a browser runs as script when the report is opened
    /// (an XML report: see [`crate::active_content`]); nothing was stored.
    ScriptDetected,
}

impl RenderCause {
    /// Every cause, in declaration order.
    pub const ALL: [RenderCause; 16] = [
        Self::DivisionByZero,
        Self::FilterFailed,
        Self::CalcFailed,
        Self::AggregationFailed,
        Self::InvalidAccess,
        Self::InvalidCall,
        Self::EvaluationFailed,
        Self::TemplateSyntax,
        Self::InstructionBudgetExceeded,
        Self::RecursionLimit,
        Self::OutputTooLarge,
        Self::MemoryLimit,
        Self::NestingTooDeep,
        Self::Timeout,
        Self::EngineCrashed,
        Self::ScriptDetected,
    ];

    /// The stable code (`division_by_zero`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::DivisionByZero => "division_by_zero",
            Self::FilterFailed => "filter_failed",
            Self::CalcFailed => "calc_failed",
            Self::AggregationFailed => "aggregation_failed",
            Self::InvalidAccess => "invalid_access",
            Self::InvalidCall => "invalid_call",
            Self::EvaluationFailed => "evaluation_failed",
            Self::TemplateSyntax => "template_syntax",
            Self::InstructionBudgetExceeded => "instruction_budget_exceeded",
            Self::RecursionLimit => "recursion_limit",
            Self::OutputTooLarge => "output_too_large",
            Self::MemoryLimit => "memory_limit",
            Self::NestingTooDeep => "nesting_too_deep",
            Self::Timeout => "timeout",
            Self::EngineCrashed => "engine_crashed",
            Self::ScriptDetected => "script_detected",
        }
    }

    /// Parses [`RenderCause::as_str`].
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == raw)
    }

    /// The fixed sentence of the cause.
    pub fn message(&self) -> &'static str {
        match self {
            Self::DivisionByZero => "a division by zero",
            Self::FilterFailed => "a filter could not apply to its input or argument",
            Self::CalcFailed => "a calc expression is not arithmetic the tag can evaluate",
            Self::AggregationFailed => {
                "an aggregation tag was not given rows, or its total overflowed"
            }
            Self::InvalidAccess => "a field or an index was read from a value that has none",
            Self::InvalidCall => {
                "a name that is not a function was called, or a function with the wrong arguments"
            }
            Self::EvaluationFailed => "the template could not be evaluated",
            Self::TemplateSyntax => "the template does not parse",
            Self::InstructionBudgetExceeded => "the template exceeded its instruction budget",
            Self::RecursionLimit => "the template exceeded its recursion limit",
            Self::OutputTooLarge => "the output exceeded its size limit",
            Self::MemoryLimit => "the template exceeded its memory limit",
            Self::NestingTooDeep => "the template nests deeper than allowed",
            Self::Timeout => "the render exceeded its time limit",
            Self::EngineCrashed => "the process running the template failed",
            Self::ScriptDetected => {
                "the rendered output holds markup a browser runs as script; it was not stored"
            }
        }
    }
}

impl From<EvaluationCause> for RenderCause {
    fn from(c: EvaluationCause) -> Self {
        match c {
            EvaluationCause::DivisionByZero => Self::DivisionByZero,
            EvaluationCause::FilterFailed => Self::FilterFailed,
            EvaluationCause::CalcFailed => Self::CalcFailed,
            EvaluationCause::AggregationFailed => Self::AggregationFailed,
            EvaluationCause::InvalidAccess => Self::InvalidAccess,
            EvaluationCause::InvalidCall => Self::InvalidCall,
            EvaluationCause::EvaluationFailed => Self::EvaluationFailed,
        }
    }
}

/// Why a report's render failed, as `GET /v1/reports/{id}` shows it (`metadata.renderError`):
/// the cause and the template line when known. Never a data value; never in events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderFailure {
    /// The cause.
    pub cause: RenderCause,
    /// 1-based template line of the tag or `{{ }}` that failed, when known.
    pub line: Option<u32>,
}

impl RenderError {
    /// The cause and line of this error, for a report's metadata (no data values).
    pub fn failure(&self) -> RenderFailure {
        let (cause, line) = match self {
            RenderError::Syntax(_) => (RenderCause::TemplateSyntax, None),
            RenderError::Evaluation(_) => (RenderCause::EvaluationFailed, None),
            RenderError::Fault(f) => (f.cause.into(), f.line),
            RenderError::FuelExhausted => (RenderCause::InstructionBudgetExceeded, None),
            RenderError::RecursionLimit => (RenderCause::RecursionLimit, None),
            RenderError::OutputTooLarge(_) => (RenderCause::OutputTooLarge, None),
            RenderError::MemoryLimit(_) => (RenderCause::MemoryLimit, None),
            RenderError::NestingTooDeep(_) => (RenderCause::NestingTooDeep, None),
            RenderError::Timeout => (RenderCause::Timeout, None),
            RenderError::Crashed(_) => (RenderCause::EngineCrashed, None),
        };
        RenderFailure { cause, line }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for c in RenderCause::ALL {
            assert!(seen.insert(c.as_str()), "{c:?}");
            assert_eq!(RenderCause::parse(c.as_str()), Some(c));
            assert!(!c.message().is_empty());
        }
        assert_eq!(RenderCause::parse("nope"), None);
    }

    #[test]
    fn every_render_error_has_its_cause_and_only_a_fault_a_line() {
        let cases = [
            (
                RenderError::Syntax("line 2: x".into()),
                RenderCause::TemplateSyntax,
            ),
            (
                RenderError::Evaluation("x".into()),
                RenderCause::EvaluationFailed,
            ),
            (
                RenderError::FuelExhausted,
                RenderCause::InstructionBudgetExceeded,
            ),
            (RenderError::RecursionLimit, RenderCause::RecursionLimit),
            (RenderError::OutputTooLarge(1), RenderCause::OutputTooLarge),
            (RenderError::MemoryLimit(1), RenderCause::MemoryLimit),
            (RenderError::NestingTooDeep(1), RenderCause::NestingTooDeep),
            (RenderError::Timeout, RenderCause::Timeout),
            (RenderError::Crashed("x".into()), RenderCause::EngineCrashed),
        ];
        for (e, cause) in cases {
            assert_eq!(e.failure(), RenderFailure { cause, line: None }, "{e}");
        }
        for c in [
            EvaluationCause::DivisionByZero,
            EvaluationCause::FilterFailed,
            EvaluationCause::CalcFailed,
            EvaluationCause::AggregationFailed,
            EvaluationCause::InvalidAccess,
            EvaluationCause::InvalidCall,
            EvaluationCause::EvaluationFailed,
        ] {
            let e = RenderError::Fault(Box::new(EvaluationFault::new(c, "x")));
            let code = serde_json::to_value(c).unwrap_or_default();
            assert_eq!(code, e.failure().cause.as_str(), "{c:?}");
            assert_eq!(e.failure().line, None);
        }
    }

    #[test]
    fn a_fault_names_its_cause_and_line_and_keeps_its_words_for_the_logs() {
        let mut f = EvaluationFault::new(EvaluationCause::DivisionByZero, "calc: division by zero");
        f.line = Some(3);
        let e = RenderError::Fault(Box::new(f));
        assert_eq!(
            e.to_string(),
            "template evaluation error: calc: division by zero (line 3)"
        );
        assert_eq!(
            e.failure(),
            RenderFailure {
                cause: RenderCause::DivisionByZero,
                line: Some(3)
            }
        );
        assert_eq!(
            RenderError::Timeout.failure(),
            RenderFailure {
                cause: RenderCause::Timeout,
                line: None
            }
        );
        assert_eq!(
            RenderError::Evaluation("x".into()).failure().cause,
            RenderCause::EvaluationFailed
        );
    }
}
