// Azure SQL logical server (Microsoft Entra authentication ONLY) and the queue database.
//
// No SQL login, no password: azureADOnlyAuthentication = true, and the Entra admin (a user, a group or an app,
// given by parameters) is the only principal that exists at first. The deployer (that admin, or a member of the
// admin group) then runs infra/sql/grant-app-identity.sql, which creates the app identity's contained user with
// data roles only, and `npm run schema -- apply`, which creates the tables. See docs/azure.md.
//
// The Entra admin: the server's `administrators` property is honoured only when the server is created (the
// template reference: on an update it is ignored or fails, e.g. AadOnlyAuthenticationIsEnabled, Azure/bicep#6858).
// So it is sent only for a new server (serverExists = false); on later deployments the admin and Entra-only
// authentication are managed through their child resources (servers/administrators 'ActiveDirectory' and
// servers/azureADOnlyAuthentications 'Default'), which create-or-update. infra/deploy.sh finds out whether the
// server exists before it deploys.
//
// Network: the firewall admits "Azure services" (the 0.0.0.0 rule, which the app needs on Flex Consumption
// without VNet integration) and, optionally, the deployer's public IP for the two deploy steps above.
// Authentication is still Entra-only; for private networking use Flex VNet integration + a private endpoint
// (not in this template).

@description('Logical server name (globally unique, lowercase letters, digits and hyphens).')
param serverName string

@description('Database name.')
param databaseName string

@description('Azure region.')
param location string

@description('Tags for the resources.')
param tags object = {}

@description('Entra admin display name: a user principal name, a group name or an app name.')
param adminLogin string

@description('Entra admin object id (for an app: the service principal object id).')
param adminObjectId string

@description('Entra admin kind.')
@allowed([
  'User'
  'Group'
  'Application'
])
param adminPrincipalType string = 'User'

@description('True when the server already exists: its admin and Entra-only authentication are then set through child resources, not the server\'s administrators property (honoured only at creation).')
param serverExists bool

@description('Database SKU name. GP_S_Gen5 = General Purpose serverless (vCore); e.g. GP_Gen5 for provisioned, S0 for DTU.')
param skuName string = 'GP_S_Gen5'

@description('SKU tier matching skuName (GeneralPurpose, BusinessCritical, Hyperscale, Standard, ...).')
param skuTier string = 'GeneralPurpose'

@description('Hardware family for vCore SKUs (Gen5); empty for DTU SKUs.')
param skuFamily string = 'Gen5'

@description('vCores (serverless: the maximum) or DTUs.')
param skuCapacity int = 2

@description('Serverless only: minimum vCores, as a decimal string (0.5, 0.75, 1, ...).')
param minCapacity string = '0.5'

@description('Serverless only: minutes idle before auto-pause; -1 disables auto-pause. A 10 s drain timer keeps the database busy, so it never pauses while the app runs.')
param autoPauseDelayMinutes int = 60

@description('Maximum database size in bytes (32 GiB by default); 0 = the SKU\'s default (DTU tiers such as Basic only take their own fixed sizes).')
param maxSizeBytes int = 34359738368

@description('Backup storage redundancy (Local is not offered in every region).')
@allowed([
  'Local'
  'Zone'
  'Geo'
  'GeoZone'
])
param backupStorageRedundancy string = 'Local'

@description('Public IPv4 address of the deployer, admitted by a firewall rule so it can run the grant and schema steps; empty = no rule.')
param clientIpAddress string = ''

@description('A system-assigned identity for the logical server: the announce of T-SQL publishes signs its sp_invoke_external_rest_endpoint calls with it (main.bicep announceTSqlPublishes).')
param systemAssignedIdentity bool = false

var isServerless = startsWith(toUpper(skuName), 'GP_S_')

resource server 'Microsoft.Sql/servers@2023-08-01' = {
  name: serverName
  location: location
  tags: tags
  identity: systemAssignedIdentity ? {
    type: 'SystemAssigned'
  } : null
  properties: {
    minimalTlsVersion: '1.2'
    publicNetworkAccess: 'Enabled'
    // Entra-only: no administratorLogin / administratorLoginPassword at all. Sent on creation only (see above).
    administrators: serverExists ? null : {
      administratorType: 'ActiveDirectory'
      azureADOnlyAuthentication: true
      login: adminLogin
      sid: adminObjectId
      principalType: adminPrincipalType
      tenantId: tenant().tenantId
    }
  }
}

// On an existing server: the Entra admin, then Entra-only authentication (which needs an Entra admin).
resource entraAdmin 'Microsoft.Sql/servers/administrators@2023-08-01' = if (serverExists) {
  parent: server
  name: 'ActiveDirectory'
  properties: {
    administratorType: 'ActiveDirectory'
    login: adminLogin
    sid: adminObjectId
    tenantId: tenant().tenantId
  }
}

resource entraOnly 'Microsoft.Sql/servers/azureADOnlyAuthentications@2023-08-01' = if (serverExists) {
  parent: server
  name: 'Default'
  properties: {
    azureADOnlyAuthentication: true
  }
  dependsOn: [
    entraAdmin
  ]
}

// The documented "Allow Azure services and resources to access this server" rule (0.0.0.0 - 0.0.0.0).
resource allowAzureServices 'Microsoft.Sql/servers/firewallRules@2023-08-01' = {
  parent: server
  name: 'AllowAllWindowsAzureIps'
  properties: {
    startIpAddress: '0.0.0.0'
    endIpAddress: '0.0.0.0'
  }
}

resource allowDeployer 'Microsoft.Sql/servers/firewallRules@2023-08-01' = if (!empty(clientIpAddress)) {
  parent: server
  name: 'AllowDeployer'
  properties: {
    startIpAddress: clientIpAddress
    endIpAddress: clientIpAddress
  }
}

resource database 'Microsoft.Sql/servers/databases@2023-08-01' = {
  parent: server
  name: databaseName
  location: location
  tags: tags
  sku: {
    name: skuName
    tier: skuTier
    family: empty(skuFamily) ? null : skuFamily
    capacity: skuCapacity
  }
  properties: {
    collation: 'SQL_Latin1_General_CP1_CI_AS'
    maxSizeBytes: maxSizeBytes > 0 ? maxSizeBytes : null
    zoneRedundant: false
    requestedBackupStorageRedundancy: backupStorageRedundancy
    // Serverless-only properties; sent as null (omitted) for provisioned and DTU SKUs.
    autoPauseDelay: isServerless ? autoPauseDelayMinutes : null
    minCapacity: isServerless ? json(minCapacity) : null
  }
}

@description('Server host name: the SQL_SERVER app setting.')
output fullyQualifiedDomainName string = server.properties.fullyQualifiedDomainName

@description('Logical server name.')
output serverName string = server.name

@description('Database name: the SQL_DATABASE app setting.')
output databaseName string = database.name

@description('Object id of the server\'s system-assigned identity (empty without one): the announce\'s sender on the drain-request queue.')
output principalId string = systemAssignedIdentity ? server.identity.principalId : ''
