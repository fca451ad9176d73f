//! Binding a checked guard file to its upstream: every guarded tool
//! exists, every argument and pointer can reach it, every lookup reads a
//! tool that exists and is not guarded, with arguments and pointers its
//! schemas hold. What comes out is the guards as they run
//! ([`BoundGuard`]), each with its tool's `outputSchema`; the file's own
//! type ([`GuardFile`]) stays what the file says.

use crate::guard_file::{Guard, GuardFile, Lookup, LookupArgument};
use rmcp::model::Tool;
use serde_json::{Map, Value};

/// A guard bound to its upstream tool.
#[derive(Debug, Clone)]
pub struct BoundGuard {
    /// The guard, as the file declares it.
    pub guard: Guard,
    /// The guarded tool's `outputSchema`, when the upstream declares one:
    /// a lookup's result must satisfy it.
    pub output_schema: Option<Map<String, Value>>,
}

impl std::ops::Deref for BoundGuard {
    type Target = Guard;
    fn deref(&self) -> &Guard {
        &self.guard
    }
}

/// Why a guard file does not fit the upstream's tools, with the line.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A guarded tool the upstream does not have.
    #[error("{path}:{line}: the upstream has no tool {tool:?}; it has {have}")]
    NoSuchTool {
        /// The guard file.
        path: String,
        /// The `tool` line.
        line: usize,
        /// The tool named.
        tool: String,
        /// The upstream's tools.
        have: String,
    },
    /// A `[guard.fields]` argument or `key_argument` the tool does not
    /// declare: the upstream would never receive it (a typo).
    #[error("{path}:{line}: tool {tool:?} declares no argument {argument:?} (its inputSchema.properties are {declared}); the upstream would never receive it")]
    UndeclaredArgument {
        /// The guard file.
        path: String,
        /// The line naming the argument.
        line: usize,
        /// The guarded tool.
        tool: String,
        /// The argument named.
        argument: String,
        /// The arguments the tool declares.
        declared: String,
    },
    /// A JSON Pointer in `[guard.fields]` or `key_argument` that nothing in
    /// the tool's input schema can hold.
    #[error("{path}:{line}: nothing in tool {tool:?}'s inputSchema can hold {pointer} (local $ref, anyOf/oneOf/allOf and array items followed); the upstream would never receive it")]
    UnholdablePointer {
        /// The guard file.
        path: String,
        /// The line naming the pointer.
        line: usize,
        /// The guarded tool.
        tool: String,
        /// The pointer, as written.
        pointer: String,
    },
    /// A `[guard.lookup]` tool that is itself guarded: a lookup must read,
    /// and a guarded tool acts.
    #[error("{path}:{line}: the lookup tool {tool:?} is guarded in this file; a lookup must read the provider's record, never act")]
    LookupGuarded {
        /// The guard file.
        path: String,
        /// The `[guard.lookup]` line.
        line: usize,
        /// The lookup tool.
        tool: String,
    },
    /// A `[guard.lookup]` pointer (`executed`, `not_executed`, `result`,
    /// `matches`) that nothing in the lookup tool's `outputSchema` can hold:
    /// its result would never say so.
    #[error("{path}:{line}: nothing in the lookup tool {tool:?}'s outputSchema can hold {pointer} ({what}); its result would never say so")]
    LookupPointer {
        /// The guard file.
        path: String,
        /// The `[guard.lookup]` line.
        line: usize,
        /// The lookup tool.
        tool: String,
        /// The pointer, as written.
        pointer: String,
        /// Which key of the table names it.
        what: String,
    },
}

impl GuardFile {
    /// Checks the file against the upstream's `tools` and returns its
    /// guards bound to them, in the file's order.
    pub fn bind(&self, tools: &[Tool]) -> Result<Vec<BoundGuard>, BindError> {
        let guarded: Vec<&str> = self.guards.iter().map(|g| g.tool.as_str()).collect();
        let have = || {
            tools
                .iter()
                .map(|t| t.name.as_ref())
                .collect::<Vec<&str>>()
                .join(", ")
        };
        let mut bound = Vec::with_capacity(self.guards.len());
        for g in &self.guards {
            let Some(tool) = tools.iter().find(|t| t.name == g.tool) else {
                return Err(BindError::NoSuchTool {
                    path: self.path.clone(),
                    line: g.line,
                    tool: g.tool.clone(),
                    have: have(),
                });
            };
            if let Some(lookup) = g.lookup() {
                if guarded.contains(&lookup.tool.as_str()) {
                    return Err(BindError::LookupGuarded {
                        path: self.path.clone(),
                        line: lookup.line,
                        tool: lookup.tool.clone(),
                    });
                }
                let Some(reader) = tools.iter().find(|t| t.name == lookup.tool) else {
                    return Err(BindError::NoSuchTool {
                        path: self.path.clone(),
                        line: lookup.line,
                        tool: lookup.tool.clone(),
                        have: have(),
                    });
                };
                check_lookup(&self.path, lookup, reader)?;
            }
            check_arguments(&self.path, g, tool)?;
            bound.push(BoundGuard {
                guard: g.clone(),
                output_schema: tool.output_schema.as_deref().cloned(),
            });
        }
        Ok(bound)
    }
}

/// Every argument a guard names (its fields but `meta:` ones, its key
/// argument, its lookup's frozen arguments) against the tool's
/// `inputSchema`.
fn check_arguments(path: &str, g: &Guard, tool: &Tool) -> Result<(), BindError> {
    // Declared means a key of inputSchema.properties, whatever
    // additionalProperties says: an argument the schema does not
    // name is one the tool may drop, and a key it drops is no key.
    let declared: Vec<&str> = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let named = g
        .fields
        .iter()
        // `_meta` has no schema to check against.
        .filter(|f| !f.arg.in_meta())
        .map(|f| (&f.arg, f.line))
        .chain(g.key_argument.iter().map(|k| (&k.value, k.line)))
        // A lookup's arguments are read from the frozen arguments.
        .chain(g.lookup().into_iter().flat_map(|l| {
            l.arguments.iter().filter_map(move |(_, s)| match s {
                LookupArgument::Frozen(p) => Some((p, l.line)),
                LookupArgument::Key => None,
            })
        }));
    let schema = Value::Object((*tool.input_schema).clone());
    for (argument, line) in named {
        if argument.is_pointer() {
            if !crate::guard_file::schema_holds(&schema, argument) {
                return Err(BindError::UnholdablePointer {
                    path: path.to_owned(),
                    line,
                    tool: g.tool.clone(),
                    pointer: argument.to_string(),
                });
            }
            continue;
        }
        if !declared.contains(&argument.as_str()) {
            return Err(BindError::UndeclaredArgument {
                path: path.to_owned(),
                line,
                tool: g.tool.clone(),
                argument: argument.to_string(),
                declared: if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// A lookup's arguments against its tool's `inputSchema` (each a declared
/// argument), and its pointers against its `outputSchema` when the tool
/// declares one: a typo found at start, not after a lost answer.
fn check_lookup(path: &str, lookup: &Lookup, reader: &Tool) -> Result<(), BindError> {
    let declared: Vec<&str> = reader
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for (name, _) in &lookup.arguments {
        if !declared.contains(&name.as_str()) {
            return Err(BindError::UndeclaredArgument {
                path: path.to_owned(),
                line: lookup.line,
                tool: lookup.tool.clone(),
                argument: name.clone(),
                declared: if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                },
            });
        }
    }
    let Some(output) = reader.output_schema.as_deref() else {
        return Ok(());
    };
    let schema = Value::Object(output.clone());
    let pointers = [
        ("executed.pointer", Some(&lookup.executed.pointer)),
        ("not_executed.pointer", Some(&lookup.not_executed.pointer)),
        ("result", lookup.result.as_ref()),
    ]
    .into_iter()
    .filter_map(|(what, p)| p.map(|p| (what.to_owned(), p.clone())))
    .chain(
        lookup
            .matches
            .iter()
            .map(|(field, p)| (format!("matches.{field}"), p.clone())),
    );
    for (what, pointer) in pointers {
        if pointer.is_empty() {
            continue;
        }
        let holds = crate::guard_file::ArgPath::parse(&pointer)
            .is_ok_and(|p| crate::guard_file::schema_holds(&schema, &p));
        if !holds {
            return Err(BindError::LookupPointer {
                path: path.to_owned(),
                line: lookup.line,
                tool: lookup.tool.clone(),
                pointer,
                what,
            });
        }
    }
    Ok(())
}
