using System;
using System.Collections.Generic;
using System.Linq;

namespace Studio.Build.Pipeline
{
    /// <summary>Decides which platforms a nightly build produces.</summary>
    public sealed class BuildMatrix
    {
        private readonly List<PlatformTarget> _targets = new List<PlatformTarget>();

        public BuildMatrix(IEnumerable<PlatformTarget> targets)
        {
            _targets.AddRange(targets ?? throw new ArgumentNullException(nameof(targets)));
        }

        public IReadOnlyList<PlatformTarget> ForNightly(DateTime day)
        {
            var result = new List<PlatformTarget>();
            foreach (var t in _targets)
            {
                if (!t.Enabled)
                {
                    continue;
                }
                if (t.WeeklyOnly && day.DayOfWeek != DayOfWeek.Sunday)
                {
                    continue;
                }
                result.Add(t);
            }
            return result;
        }
    }
}
