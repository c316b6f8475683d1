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

        /// <summary>
        /// The targets to build on <paramref name="day"/>: enabled ones, weekly
        /// ones only on Sundays, and certification builds only in the two weeks
        /// before their submission date.
        /// </summary>
        public IReadOnlyList<PlatformTarget> ForNightly(DateTime day) =>
            _targets.Where(t => t.Enabled && RunsOn(t, day.Date)).ToList();

        private static bool RunsOn(PlatformTarget t, DateTime day)
        {
            if (t.WeeklyOnly && day.DayOfWeek != DayOfWeek.Sunday)
            {
                return false;
            }
            if (t.CertificationDeadline is DateTime deadline)
            {
                var window = deadline.Date - day;
                return window >= TimeSpan.Zero && window <= TimeSpan.FromDays(14);
            }
            return true;
        }
    }
}
