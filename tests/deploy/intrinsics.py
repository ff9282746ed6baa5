"""CloudFormation's intrinsic functions resolved offline, for the deploy checks that read the
template as AWS would after a deploy (``preflight.Resolved`` against the quotas,
``iam_policy.Stack`` for "may this function make this call?").

A subclass says what a ``Ref`` and a ``Fn::GetAtt`` give (stand-in physical names and ARNs);
this class evaluates conditions and every other intrinsic the template uses. An intrinsic it
does not know is an error, never passed through as data: a check would otherwise read an
unresolved ``{"Fn::...": ...}`` as a value.
"""

from __future__ import annotations

import re
from typing import Any

NOVALUE = object()  # what ``{"Ref": "AWS::NoValue"}`` resolves to: dropped from lists and maps


class Intrinsics:
    template: dict[str, Any]
    region: str

    def __init__(self) -> None:
        self._conditions: dict[str, bool] = {}

    def ref(self, name: str) -> Any:
        raise NotImplementedError

    def get_att(self, logical: str, attr: str) -> Any:
        raise NotImplementedError

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            self._conditions[name] = bool(self.resolve(self.template.get("Conditions", {})[name]))
        return self._conditions[name]

    def sub(self, text: str, variables: dict[str, Any]) -> str:
        def one(m: re.Match[str]) -> str:
            name = m.group(1)
            if name.startswith("!"):  # ${!Literal} stays a literal ${Literal}
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name:
                return str(self.get_att(*name.split(".", 1)))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def resolve(self, value: Any) -> Any:  # noqa: C901 - one branch per intrinsic
        if isinstance(value, list):
            return [r for r in (self.resolve(v) for v in value) if r is not NOVALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref":
                return NOVALUE if arg == "AWS::NoValue" else self.ref(arg)
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::If":
                name, yes, no = arg
                return self.resolve(yes if self.condition(name) else no)
            if key == "Fn::Equals":
                a, b = (self.resolve(v) for v in arg)
                return str(a) == str(b)
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::And":
                return all(self.resolve(v) for v in arg)
            if key == "Fn::Or":
                return any(self.resolve(v) for v in arg)
            if key == "Fn::GetAtt":
                logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(logical, attr)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                return self.sub(text, {k: self.resolve(v) for k, v in variables.items()})
            if key == "Fn::Join":
                sep, items = arg
                return sep.join(str(v) for v in self.resolve(items))
            if key == "Fn::Split":
                sep, text = arg
                return str(self.resolve(text)).split(sep)
            if key == "Fn::Select":
                index, items = arg
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::GetAZs":
                return [f"{self.region}a", f"{self.region}b"]
            if key.startswith("Fn::"):
                raise AssertionError(f"unsupported intrinsic {key}")
        out = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not NOVALUE}
