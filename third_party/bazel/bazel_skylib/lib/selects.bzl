"""Stand-in for bazel_skylib's selects.config_setting_group.

match_any: an alias that resolves to whichever listed condition matches
(Bazel refuses ambiguous matches), else to a setting that never matches.
match_all: a chain of aliases, matching only when every condition does.
"""

def _never(name):
    never = name + "__never"
    native.config_setting(
        name = never,
        define_values = {"bazel_skylib_standin_never": name},
    )
    return ":" + never

def _config_setting_group(name, match_any = [], match_all = [], visibility = None):
    never = _never(name)
    if match_any:
        branches = {condition: condition for condition in match_any}
        branches["//conditions:default"] = never
        native.alias(name = name, actual = select(branches), visibility = visibility)
        return
    # match_all: condition i selects the alias of conditions i+1..n.
    previous = None
    for i, condition in reversed(list(enumerate(match_all))):
        step = name if i == 0 else "%s__all_%d" % (name, i)
        actual = select({
            condition: previous if previous else condition,
            "//conditions:default": never,
        })
        native.alias(name = step, actual = actual, visibility = visibility if i == 0 else None)
        previous = ":" + step

selects = struct(config_setting_group = _config_setting_group)
